#include "supervise/torchrun.h"

#include "absl/strings/str_cat.h"

namespace traind {

std::vector<std::string> TorchrunEnvironment(const RankAddress& address) {
  return {absl::StrCat("RANK=", address.rank), absl::StrCat("LOCAL_RANK=", address.local_rank),
          absl::StrCat("WORLD_SIZE=", address.world_size),
          absl::StrCat("MASTER_ADDR=", address.master_addr),
          absl::StrCat("MASTER_PORT=", address.master_port)};
}

int RendezvousPort(int64_t slurm_job_id) { return 20000 + static_cast<int>(slurm_job_id % 20000); }

}  // namespace traind

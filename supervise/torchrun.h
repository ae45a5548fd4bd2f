// torchrun's contract, in one place: the environment that makes a traind-worker one rank of a
// data-parallel job (engine/data_parallel.h reads it back: RankFromEnvironment). Every path that
// starts ranks builds it here: the scheduler (ranks on this machine), PeerService (a peer's
// ranks), traind-hosts (this host's ranks of a --hosts job) and traind-slurm-task (a Slurm task).
#ifndef TRAIND_SUPERVISE_TORCHRUN_H_
#define TRAIND_SUPERVISE_TORCHRUN_H_

#include <cstdint>
#include <string>
#include <vector>

namespace traind {

// Where a rank stands, and where rank 0 serves the rendezvous store (c10d's TCPStore).
struct RankAddress {
  int rank = 0;
  int local_rank = 0;  // among the ranks on its machine
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
};

// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as "NAME=value".
std::vector<std::string> TorchrunEnvironment(const RankAddress& address);

// A Slurm job's rendezvous port, from its id: every task computes the same one without talking to
// the others, in 20000..39999.
int RendezvousPort(int64_t slurm_job_id);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_TORCHRUN_H_

// Precompiled header of the torch targets (models/, worker/): parsing <torch/torch.h> costs
// ~20 s per file on a 2-core machine, so it is parsed once per build.
#include <torch/torch.h>

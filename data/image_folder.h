// Image folders in torchvision's ImageFolder layout: DIR/train/CLASS/*.png|jpg|jpeg and
// DIR/test/CLASS/...; classes are the train folder's subfolders sorted by name (label 0 first).
// Decoded once per job with stb_image (Debian's libstb), all into memory, as 0..1 floats; images
// of different sizes need a size to resize them to. Not std::filesystem: see
// common/temp_dir_for_tests.h for why torch-linked code avoids it.
#ifndef TRAIND_DATA_IMAGE_FOLDER_H_
#define TRAIND_DATA_IMAGE_FOLDER_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/beneath.h"
#include "data/dataset.h"

namespace traind {

// `size` > 0: resize every image to size x size (bilinear). Grey images stay one channel, colour
// ones three (alpha dropped); a folder mixing them is converted to the first image's.
// INVALID_ARGUMENT names the file that does not decode or the folder that is missing.
// Every folder and image is opened beneath `roots` (common/beneath.h; a job's data roots): a
// class folder or image that is a symlink leading out of its root, or a folder swapped for one,
// is PERMISSION_DENIED "data_dir: PATH is outside the daemon's data roots ...", never skipped.
absl::StatusOr<TrainTest> ReadImageFolder(const std::string& dir, int64_t size,
                                          const BeneathRoots& roots = BeneathRoots());

}  // namespace traind

#endif  // TRAIND_DATA_IMAGE_FOLDER_H_

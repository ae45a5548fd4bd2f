// Tabular data: a CSV file with a header row, numeric feature columns and one label column.
// Labels are integer class indices, or names (classes are then the sorted distinct names); with
// loss mse, numbers (targets [N, 1]). Rows are split into train (80%) and test (20%) by a
// permutation with a fixed seed, so every job on one file tests on the same rows. Quoted fields may
// not contain commas.
#ifndef TRAIND_DATA_CSV_FILE_H_
#define TRAIND_DATA_CSV_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "data/dataset.h"

namespace traind {

// Reads the open file `fd` (borrowed; the caller opened it, beneath the data roots for a job:
// dataset.h). `label_column`: a header name or a 0-based index; empty: the last column.
// INVALID_ARGUMENT names the line and column of a value that is not a number.
absl::StatusOr<TrainTest> ReadCsvFile(int fd, const std::string& label_column, bool regression);

}  // namespace traind

#endif  // TRAIND_DATA_CSV_FILE_H_

#include "data/csv_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace traind {

namespace {

constexpr int64_t kMaxColumns = 100000;
constexpr double kTrainFraction = 0.8;
constexpr uint64_t kSplitSeed = 20261130;  // fixed: the same test rows for every job

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields = absl::StrSplit(line, ',');
  for (std::string& field : fields) {
    absl::string_view f = absl::StripAsciiWhitespace(field);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
    field = std::string(f);
  }
  return fields;
}

absl::StatusOr<int> LabelIndex(const std::vector<std::string>& header, const std::string& column) {
  const int columns = static_cast<int>(header.size());
  if (column.empty()) return columns - 1;
  const auto named = std::find(header.begin(), header.end(), column);
  if (named != header.end()) return static_cast<int>(named - header.begin());
  int index = -1;
  if (absl::SimpleAtoi(column, &index) && index >= 0 && index < columns) return index;
  return absl::InvalidArgumentError(
      absl::StrCat("label_column: '", column,
                   "' is neither a column of the header nor an index 0..", columns - 1));
}

// Lines of a FILE, as std::getline splits them (the newline dropped, nothing else).
class LineReader {
 public:
  explicit LineReader(FILE* file) : file_(file) {}
  ~LineReader() { std::free(buffer_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool Next(std::string* line) {
    const ssize_t n = getline(&buffer_, &capacity_, file_);
    if (n < 0) return false;
    line->assign(buffer_, static_cast<size_t>(n));
    if (!line->empty() && line->back() == '\n') line->pop_back();
    return true;
  }

 private:
  FILE* const file_;
  char* buffer_ = nullptr;
  size_t capacity_ = 0;
};

// Loss mse: each label a finite number.
absl::StatusOr<std::vector<float>> NumericTargets(const std::vector<std::string>& label_text) {
  std::vector<float> targets;
  for (size_t i = 0; i < label_text.size(); ++i) {
    float value = 0;
    if (!absl::SimpleAtof(label_text[i], &value) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("data_file: label '", label_text[i].substr(0, 40), "' in data row ", i + 1,
                       " is not a number (loss mse needs numeric targets)"));
    }
    targets.push_back(value);
  }
  return targets;
}

// Classification: whole numbers from 0 as they are, or names numbered in sorted order (as
// ImageFolder numbers its folders).
absl::StatusOr<std::vector<int64_t>> ClassIndices(const std::vector<std::string>& label_text) {
  bool integers = true;
  for (size_t i = 0; i < label_text.size() && integers; ++i) {
    int64_t value = 0;
    integers = absl::SimpleAtoi(label_text[i], &value);
    // A whole number below 0 is no class index, and no class name either: taken for a name it
    // would silently become a class of its own.
    if (integers && value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data_file: label ", value, " in data row ", i + 1,
          " is not a class: class labels are whole numbers from 0 (or names, e.g. 'cat'; numeric "
          "targets need loss mse)"));
    }
  }
  std::vector<int64_t> classes;
  if (integers) {
    for (const std::string& text : label_text) {
      int64_t value = 0;
      (void)absl::SimpleAtoi(text, &value);
      classes.push_back(value);
    }
    return classes;
  }
  std::map<std::string, int64_t> index;
  for (const std::string& text : label_text) index.emplace(text, 0);
  int64_t next = 0;
  for (auto& [name, i] : index) i = next++;
  for (const std::string& text : label_text) classes.push_back(index[text]);
  return classes;
}

}  // namespace

absl::StatusOr<TrainTest> ReadCsvFile(int fd, const std::string& label_column, bool regression) {
  // fclose closes what fdopen was given: a duplicate, so `fd` stays the caller's.
  const int own = dup(fd);
  std::unique_ptr<FILE, int (*)(FILE*)> file(own < 0 ? nullptr : fdopen(own, "r"), fclose);
  if (file == nullptr) {
    if (own >= 0) close(own);
    return absl::InternalError(absl::StrCat("data_file: cannot read: ", std::strerror(errno)));
  }
  LineReader in(file.get());
  std::string line;
  if (!in.Next(&line)) return absl::InvalidArgumentError("data_file: the CSV file is empty");
  const std::vector<std::string> header = Fields(line);
  if (header.size() < 2 || static_cast<int64_t>(header.size()) > kMaxColumns) {
    return absl::InvalidArgumentError(absl::StrCat("data_file: the header has ", header.size(),
                                                   " columns; expected 2 to ", kMaxColumns,
                                                   " (features and a label)"));
  }
  absl::StatusOr<int> label_index = LabelIndex(header, label_column);
  if (!label_index.ok()) return label_index.status();
  const int64_t columns = static_cast<int64_t>(header.size());

  std::vector<float> features;
  std::vector<std::string> label_text;
  int64_t line_number = 1;
  while (in.Next(&line)) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::vector<std::string> fields = Fields(line);
    if (static_cast<int64_t>(fields.size()) != columns) {
      return absl::InvalidArgumentError(absl::StrCat("data_file: line ", line_number, " has ",
                                                     fields.size(), " fields; the header has ",
                                                     columns));
    }
    for (int64_t c = 0; c < columns; ++c) {
      if (c == *label_index) {
        label_text.push_back(fields[c]);
        continue;
      }
      float value = 0;
      if (!absl::SimpleAtof(fields[c], &value) || !std::isfinite(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("data_file: line ", line_number, ", column '", header[c], "': '",
                         fields[c].substr(0, 40), "' is not a finite number"));
      }
      features.push_back(value);
    }
  }
  const int64_t rows = static_cast<int64_t>(label_text.size());
  if (rows < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: ", rows, " data rows; need at least 2 (train and test)"));
  }

  std::vector<float> targets;
  std::vector<int64_t> classes;
  if (regression) {
    ASSIGN_OR_RETURN(targets, NumericTargets(label_text));
  } else {
    ASSIGN_OR_RETURN(classes, ClassIndices(label_text));
  }

  torch::Tensor x = torch::from_blob(features.data(), {rows, columns - 1}, torch::kFloat32).clone();
  torch::Tensor y = regression
                        ? torch::from_blob(targets.data(), {rows, 1}, torch::kFloat32).clone()
                        : torch::from_blob(classes.data(), {rows}, torch::kInt64).clone();
  torch::Generator rng = at::detail::createCPUGenerator(kSplitSeed);
  const torch::Tensor order = torch::randperm(rows, rng);
  const int64_t n_train = std::max<int64_t>(1, static_cast<int64_t>(rows * kTrainFraction));
  const torch::Tensor train_rows = order.slice(0, 0, n_train);
  const torch::Tensor test_rows = order.slice(0, n_train, rows);
  TrainTest data;
  data.train = Split{x.index_select(0, train_rows), y.index_select(0, train_rows)};
  data.test = Split{x.index_select(0, test_rows), y.index_select(0, test_rows)};
  return data;
}

}  // namespace traind

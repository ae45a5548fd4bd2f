// OutputLines and ValidUtf8: a program's bytes become lines fit for events; OutputBudget bounds
// how many are stored.
#include "script/output_lines.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/output_budget.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::vector<std::string> Lines(const std::vector<std::string>& pieces) {
  OutputLines reader;
  std::vector<std::string> lines;
  auto keep = [&lines](absl::string_view line) { lines.emplace_back(line); };
  for (const std::string& piece : pieces) reader.Append(piece, keep);
  reader.Finish(keep);
  return lines;
}

TEST(OutputLinesTest, LinesEndAtNewlineCarriageReturnOrBoth) {
  EXPECT_EQ(Lines({"a\nb\r\nc\rd"}), (std::vector<std::string>{"a", "b", "c", "d"}));
  // Split anywhere, even between "\r" and "\n".
  EXPECT_EQ(Lines({"lo", "ss 1\r", "\nloss 2\n"}), (std::vector<std::string>{"loss 1", "loss 2"}));
  EXPECT_EQ(Lines({"\n\n"}), (std::vector<std::string>{"", ""}));
}

TEST(OutputLinesTest, AVeryLongLineIsCutWhereItReachesTheLimit) {
  const std::string huge(OutputLines::kMaxLineBytes * 2 + 5, 'x');
  const std::vector<std::string> lines = Lines({huge});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].size(), OutputLines::kMaxLineBytes);
  EXPECT_EQ(lines[2], "xxxxx");
}

// The rule, a byte at a time, as the first version of OutputLines read: the pieces-at-a-time
// reader must cut every stream, however it arrives, into the same lines.
std::vector<std::string> LinesByteByByte(const std::string& stream) {
  std::vector<std::string> lines;
  std::string partial;
  bool after_cr = false;
  for (const char c : stream) {
    if (after_cr) {
      after_cr = false;
      if (c == '\n') continue;
    }
    if (c == '\n' || c == '\r') {
      lines.push_back(partial);
      partial.clear();
      after_cr = c == '\r';
      continue;
    }
    partial += c;
    if (partial.size() == OutputLines::kMaxLineBytes) {
      lines.push_back(partial);
      partial.clear();
    }
  }
  if (!partial.empty()) lines.push_back(partial);
  return lines;
}

TEST(OutputLinesTest, AnyStreamInAnyPiecesGivesTheLinesOfTheByteByByteRule) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string stream;
    const int parts = 1 + static_cast<int>(random() % 20);
    for (int p = 0; p < parts; ++p) {
      const size_t run =
          random() % 4 == 0 ? OutputLines::kMaxLineBytes - 2 + random() % 5 : random() % 30;
      stream.append(run, 'x');
      stream += "\r\n"[random() % 2];
    }
    std::vector<std::string> pieces;
    for (size_t at = 0; at < stream.size();) {
      const size_t size = std::min<size_t>(1 + random() % 40000, stream.size() - at);
      pieces.push_back(stream.substr(at, size));
      at += size;
    }
    EXPECT_EQ(Lines(pieces), LinesByteByByte(stream)) << "trial " << trial;
  }
}

TEST(OutputLinesTest, InvalidUtf8BecomesTheReplacementCharacter) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9 \xE2\x9C\x93"), "caf\xC3\xA9 \xE2\x9C\x93");  // valid stays
  EXPECT_EQ(ValidUtf8("a\xFF"
                      "b"),
            "a" + replacement + "b");
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), replacement + replacement);                    // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), replacement + replacement + replacement);  // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80").size(), 4 * replacement.size());        // > U+10FFFF
  EXPECT_EQ(ValidUtf8("end\xE2\x9C"), "end" + replacement + replacement);         // cut short
  // Escapes are text: the clients make them harmless when they print them.
  EXPECT_EQ(ValidUtf8("\x1b[31mred"), "\x1b[31mred");
}

TEST(OutputLinesTest, ASequenceSplitBetweenPiecesStaysWholeAndABadByteIsReplacedInAnyLine) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(Lines({"caf\xC3", "\xA9\n"}), (std::vector<std::string>{"caf\xC3\xA9"}));
  EXPECT_EQ(Lines({"a\xFF\nok\n", "b\xFF", "c\n"}),
            (std::vector<std::string>{"a" + replacement, "ok", "b" + replacement + "c"}));
  // The callback sees each line while it is whole; the view of a replaced line is not stale.
  OutputLines reader;
  std::vector<std::string> seen;
  reader.Append("x\xFF\ny\n", [&](absl::string_view line) { seen.emplace_back(line); });
  EXPECT_EQ(seen, (std::vector<std::string>{"x" + replacement, "y"}));
}

TEST(OutputBudgetTest, ABurstThenASteadyRateAndANoteOfWhatWasDropped) {
  OutputBudget budget("lines of output", 3, 2);
  const absl::Time start = absl::FromUnixSeconds(1000);
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += budget.Admit(start);
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ(budget.dropped_total(), 7);
  EXPECT_TRUE(budget.Admit(start + absl::Seconds(1)));  // 2 a second again
  EXPECT_TRUE(budget.Admit(start + absl::Seconds(1)));
  EXPECT_FALSE(budget.Admit(start + absl::Seconds(1)));
  std::optional<std::string> note = budget.Note(start + absl::Seconds(1));
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("8 lines of output not stored"), std::string::npos) << *note;
  EXPECT_FALSE(budget.Note(start + absl::Seconds(2)).has_value());  // nothing new dropped
}

}  // namespace
}  // namespace traind

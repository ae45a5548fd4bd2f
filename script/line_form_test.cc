// LineForm: the same line with other numbers matches; a fixed number, a word or a sign that
// differs does not.
#include "script/line_form.h"

#include <string>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(LineFormTest, TheSameLineWithOtherNumbersMatches) {
  LineForm form;
  EXPECT_FALSE(form.Matches("Epoch 1, Batch 0: loss 2.3021"));  // nothing remembered yet
  // The epoch's "1" (bytes 6-7) is fixed; the batch and the loss are not.
  ASSERT_TRUE(form.Remember("Epoch 1, Batch 0: loss 2.3021", {{6, 7}}));
  EXPECT_TRUE(form.Matches("Epoch 1, Batch 1: loss 2.2987"));
  EXPECT_TRUE(form.Matches("Epoch 1, Batch 12345: loss 0.0081"));  // runs may grow
  EXPECT_FALSE(form.Matches("Epoch 2, Batch 0: loss 0.0081"));     // the fixed run differs
  EXPECT_FALSE(form.Matches("Epoch 11, Batch 0: loss 0.0081"));    // ... or grows
  EXPECT_FALSE(form.Matches("Epoch 1, Batch 1: loss nan"));        // a word for a number
  EXPECT_FALSE(form.Matches("Epoch 1, Batch 1: loss -2.3"));       // a sign
  EXPECT_FALSE(form.Matches("Epoch 1, Batch 1: loss 2.3 "));       // one byte more
  EXPECT_FALSE(form.Matches("epoch 1, Batch 1: loss 2.3"));        // another word
  form.Forget();
  EXPECT_FALSE(form.Matches("Epoch 1, Batch 1: loss 2.2987"));
}

TEST(LineFormTest, OnlyTheCountOfAFractionIsFixed) {
  LineForm form;
  const std::string line = "Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646";
  // The whole epoch fraction and the "/0421" of the batch fraction.
  ASSERT_TRUE(form.Remember(line, {{7, 14}, {27, 32}}));
  EXPECT_TRUE(form.Matches("Epoch: 001/010 | Batch 0101/0421 | Loss: 0.2600"));
  EXPECT_FALSE(form.Matches("Epoch: 001/010 | Batch 0101/0422 | Loss: 0.2600"));
  EXPECT_FALSE(form.Matches("Epoch: 002/010 | Batch 0000/0421 | Loss: 0.2600"));
  EXPECT_FALSE(form.Matches("Epoch: 001/011 | Batch 0101/0421 | Loss: 0.2600"));
}

TEST(LineFormTest, AFixedRunPastTheSixtyFourthIsNotRemembered) {
  std::string line;
  for (int i = 0; i < 70; ++i) line += "1 ";
  LineForm form;
  EXPECT_FALSE(form.Remember(line, {{line.size() - 2, line.size() - 1}}));
  EXPECT_FALSE(form.Matches(line));
  // Runs past the 64th that are not fixed are compared as runs.
  ASSERT_TRUE(form.Remember(line, {{0, 1}}));
  std::string other = line;
  other[line.size() - 2] = '7';
  EXPECT_TRUE(form.Matches(other));
}

}  // namespace
}  // namespace traind

#include "common/terminal_text.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(TerminalSafeTest, PlainTextAndUtf8PassThrough) {
  EXPECT_EQ(TerminalSafe("lenet5 on fashion-mnist"), "lenet5 on fashion-mnist");
  EXPECT_EQ(TerminalSafe("Größe 日本 🙂 C:\\path"), "Größe 日本 🙂 C:\\path");
  EXPECT_EQ(TerminalSafe(""), "");
}

TEST(TerminalSafeTest, EscapeSequencesDoNotReachTheTerminal) {
  // Recolour, clear the screen, retitle the window: all shown, none obeyed.
  EXPECT_EQ(TerminalSafe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b]0;owned\x07"), "\\x1b[2J\\x1b]0;owned\\x07");
  EXPECT_EQ(TerminalSafe("a\x7f"
                         "b"),
            "a\\x7fb");
  EXPECT_EQ(TerminalSafe(std::string("nul\0byte", 8)), "nul\\x00byte");
  // The 8-bit CSI (U+009B) and a right-to-left override.
  EXPECT_EQ(TerminalSafe("x\xc2\x9b"
                         "31my"),
            "x\\u009b31my");
  EXPECT_EQ(TerminalSafe("evil\xe2\x80\xaetxt.exe"), "evil\\u202etxt.exe");
}

TEST(TerminalSafeTest, ANewlineCannotForgeATableRow) {
  // A job named like this printed a second, fake row in `trainctl list`.
  EXPECT_EQ(TerminalSafe("mine\n   7  SUCCEEDED  lenet5"), "mine\\n   7  SUCCEEDED  lenet5");
  EXPECT_EQ(TerminalSafe("a\rb\tc"), "a\\rb\\tc");
  // Logs and tracebacks keep their lines, but a carriage return still cannot overwrite one.
  EXPECT_EQ(TerminalSafe("line 1\n\tline 2\rX", /*keep_newlines=*/true), "line 1\n\tline 2\\rX");
}

TEST(TerminalSafeTest, BytesThatAreNotUtf8AreShownAsBytes) {
  EXPECT_EQ(TerminalSafe("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(TerminalSafe("ab\xe2\x82"), "ab\\xe2\\x82");       // cut short
}

}  // namespace
}  // namespace traind

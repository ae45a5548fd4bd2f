// trainctl: the command-line client of traind.
#include <unistd.h>

#include <iostream>

#include "client/trainctl.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return traind::RunTrainctl(args, std::cout, std::cerr, isatty(STDOUT_FILENO) != 0);
}

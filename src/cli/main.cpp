// ferrum: run transformer language models on the CPU.
#include "cli/app.h"

int main(int argc, char** argv) {
  return ferrum::cli::Cli().main(argc, argv);
}

// Running ferrum under mpirun from the CLI tests (pipeline stages, tensor-parallel ranks).
#pragma once

#include <string>

namespace ferrum::test {

// "mpirun ... -np n 'FERRUM_BINARY' " (on one host, as root where needed).
std::string mpirun(int n);

// Starts `mpirun -np 2 ferrum ARGS` (a long command), kills rank 1 once it runs, and checks that the
// job ends non-zero within 10 s (GoogleTest failures otherwise).
void expect_killed_rank_ends_job(const std::string& args);

}  // namespace ferrum::test

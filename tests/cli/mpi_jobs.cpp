#include "mpi_jobs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "test_util.h"

namespace ferrum::test {

std::string mpirun(int n) {
  return "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(n) + " '" +
         std::string(FERRUM_BINARY) + "' ";
}

void expect_killed_rank_ends_job(const std::string& args) {
  const std::string dir = temp_dir();
  // Rank 1 is found by the rank Open MPI gives it (OMPI_COMM_WORLD_RANK in its environment).
  const std::string script =
      "(" + mpirun(2) + args + " > '" + dir + "/out' 2> '" + dir + "/err' < /dev/null; echo $? > '" + dir +
      "/rc') &\n"
      "for i in $(seq 100); do\n"
      "  for p in $(pgrep -f -- \"" +
      args +
      "\"); do\n"
      "    if tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then\n"
      "      sleep 1; kill -9 $p; exit 0; fi\n"
      "  done; sleep 0.1\n"
      "done\n"
      "exit 1\n";
  std::ofstream(dir + "/kill.sh") << script;
  ASSERT_EQ(std::system(("bash '" + dir + "/kill.sh'").c_str()), 0) << "rank 1 never started";
  double waited = 0;
  for (; waited < 10 && read_text(dir + "/rc").empty(); waited += 0.1) usleep(100000);
  ASSERT_FALSE(read_text(dir + "/rc").empty()) << "the job still runs 10 s after rank 1 was killed";
  EXPECT_NE(std::stoi(read_text(dir + "/rc")), 0);
}

}  // namespace ferrum::test

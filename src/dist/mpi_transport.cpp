// The MPI world (Open MPI): each rank a process started by mpirun, on this host or others.
#include "core/fail.h"
#include "dist/transport.h"

#ifdef FERRUM_MPI
#include <mpi.h>

#include <climits>

namespace ferrum::dist {
namespace {

constexpr int kTag = 7;

class MpiTransport : public Transport {
 public:
  MpiTransport() {
    int provided = 0;
    // Rank 0 calls MPI from the engine's thread and from the main thread, never at once.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      fail("MPI: this MPI library does not allow calls from several threads");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiTransport() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, const Bytes& msg) override {
    if (msg.size() > static_cast<size_t>(INT_MAX))
      fail("MPI: a message of {} bytes is too large", msg.size());
    MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_BYTE, to, kTag, MPI_COMM_WORLD);
  }
  Bytes recv(int from) override {
    MPI_Status st;
    MPI_Probe(from, kTag, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    Bytes m(static_cast<size_t>(n));
    MPI_Recv(m.data(), n, MPI_BYTE, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return m;
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

Transport* mpi_world() {
  static MpiTransport world;
  return &world;
}
bool mpi_available() {
  return true;
}
void mpi_abort(int code) {
  int init = 0, done = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  if (!init || done) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace ferrum::dist

#else

namespace ferrum::dist {

Transport* mpi_world() {
  return nullptr;
}
bool mpi_available() {
  return false;
}
void mpi_abort(int) {}

}  // namespace ferrum::dist

#endif

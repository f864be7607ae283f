// The MPI world (Open MPI): each rank a process started by mpirun, on this host or others.
#include "core/fail.h"
#include "dist/transport.h"

#ifdef FERRUM_MPI
#include <mpi.h>

#include <climits>
#include <deque>
#include <vector>

namespace ferrum::dist {
namespace {

constexpr int kTag = 7;

// The ranks of one communicator: the world, or a group split from it.
class MpiTransport : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiTransport() override { drain(); }
  std::unique_ptr<Transport> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;  // left to MPI_Finalize (freeing is collective)
    MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub);
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiTransport>(sub);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Does not wait for the receiver: a stage sends micro-batch k on and goes on with k + 1, and the
  // last stage's answers wait for rank 0 without holding up the ranks before it.
  void send(int to, Bytes msg) override {
    if (msg.size() > static_cast<size_t>(INT_MAX))
      fail("MPI: a message of {} bytes is too large", msg.size());
    pending_.push_back({MPI_REQUEST_NULL, std::move(msg)});
    Pending& p = pending_.back();
    MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, to, kTag, comm_, &p.req);
    reap();
  }
  Bytes recv(int from) override {
    MPI_Status st;
    MPI_Probe(from, kTag, comm_, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    Bytes m(static_cast<size_t>(n));
    MPI_Recv(m.data(), n, MPI_BYTE, from, kTag, comm_, MPI_STATUS_IGNORE);
    reap();
    return m;
  }
  void allgather(const void* mine, size_t n, void* all) override {
    MPI_Allgather(mine, count(n), MPI_BYTE, all, count(n), MPI_BYTE, comm_);
  }
  void gather(const void* mine, std::span<const size_t> bytes, void* all) override {
    counts_.resize(bytes.size());
    displs_.resize(bytes.size());
    size_t at = 0;
    for (size_t r = 0; r < bytes.size(); at += bytes[r], ++r) {
      counts_[r] = count(bytes[r]);
      displs_[r] = count(at);
    }
    MPI_Gatherv(mine, counts_[rank_], MPI_BYTE, all, counts_.data(), displs_.data(), MPI_BYTE, 0, comm_);
  }

 protected:
  void drain() {  // waits for the sends still in flight
    for (Pending& p : pending_) MPI_Wait(&p.req, MPI_STATUS_IGNORE);
    pending_.clear();
  }

 private:
  struct Pending {
    MPI_Request req;
    Bytes bytes;  // kept until the send completes
  };
  void reap() {  // frees the buffers of completed sends, oldest first
    while (!pending_.empty()) {
      int done = 0;
      MPI_Test(&pending_.front().req, &done, MPI_STATUS_IGNORE);
      if (!done) break;
      pending_.pop_front();
    }
  }
  static int count(size_t n) {
    if (n > static_cast<size_t>(INT_MAX)) fail("MPI: a collective of {} bytes is too large", n);
    return static_cast<int>(n);
  }
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::deque<Pending> pending_;
  std::vector<int> counts_, displs_;
};

// MPI_COMM_WORLD, initialised on first use and finalised at exit.
class MpiWorld : public MpiTransport {
 public:
  MpiWorld() : MpiTransport(init()) {}
  ~MpiWorld() override {
    drain();
    MPI_Finalize();
  }

 private:
  static MPI_Comm init() {
    int provided = 0;
    // Rank 0 calls MPI from the engine's thread and from the main thread, never at once.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      fail("MPI: this MPI library does not allow calls from several threads");
    return MPI_COMM_WORLD;
  }
};

}  // namespace

Transport* mpi_world() {
  static MpiWorld world;
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

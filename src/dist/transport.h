// How pipeline stages talk: ordered byte messages between ranks. MpiTransport (mpi_transport.cpp,
// built with Open MPI) runs the stages as `mpirun` processes, on one host or many; LocalTransport
// runs them as threads of one process (tests, and a check without mpirun). Messages between two
// ranks arrive in the order they were sent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace ferrum::dist {

using Bytes = std::vector<uint8_t>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void send(int to, Bytes msg) = 0;  // taken: a large message is not copied
  // The next message from `from` (blocks until one arrives).
  virtual Bytes recv(int from) = 0;
  // Collectives (tensor parallelism): every rank makes the same calls in the same order.
  // `all` (size() * n bytes) receives every rank's n bytes, in rank order, on every rank.
  virtual void allgather(const void* mine, size_t n, void* all) = 0;
  // Rank 0's `all` receives rank r's bytes[r] bytes after those of the ranks before it.
  virtual void gather(const void* mine, std::span<const size_t> bytes, void* all) = 0;
  // The ranks that give the same color, numbered by key (collective: every rank calls it), or null
  // for a rank that gives a negative color. Throws where the transport cannot be split.
  virtual std::unique_ptr<Transport> split(int color, int key) = 0;
};

// The MPI world of this process (MPI initialised on first use, finalised at exit), or null when
// ferrum was built without MPI.
Transport* mpi_world();
bool mpi_available();
// Ends every rank of the MPI world (after an error on one of them), if MPI is running.
void mpi_abort(int code);

}  // namespace ferrum::dist

// How pipeline stages talk: ordered byte messages between ranks. MpiTransport (mpi_transport.cpp,
// built with Open MPI) runs the stages as `mpirun` processes, on one host or many; LocalTransport
// runs them as threads of one process (tests, and a check without mpirun). Messages between two
// ranks arrive in the order they were sent.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ferrum::dist {

using Bytes = std::vector<uint8_t>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void send(int to, const Bytes& msg) = 0;
  // The next message from `from` (blocks until one arrives).
  virtual Bytes recv(int from) = 0;
};

// The MPI world of this process (MPI initialised on first use, finalised at exit), or null when
// ferrum was built without MPI.
Transport* mpi_world();
bool mpi_available();
// Ends every rank of the MPI world (after an error on one of them), if MPI is running.
void mpi_abort(int code);

}  // namespace ferrum::dist

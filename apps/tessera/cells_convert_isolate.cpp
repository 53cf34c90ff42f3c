// The HDF5 scans of `tessera cells convert` run in a child process. libhdf5 1.10 trusts the
// global heap that holds variable-length strings (AnnData's indexes and `encoding-type`
// attributes, 10x feature names): a damaged heap or string descriptor can make it read out of
// bounds or loop forever. Every such read happens in the scan (the matrix reads that follow
// touch numeric datasets only), so the scan runs in a forked child that sends its result back
// through a pipe; a child killed by a signal, or still running after kScanTimeout, becomes a
// clean error naming the file instead of a crash or a hang of the converter. Errors the scan
// raises travel back with their type, so messages and exit codes are unchanged. The h5ad obs
// and var tables (cell names, string columns, categories) are read in the same child and travel
// back column by column (type, validity, data, offsets, categories).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cells_convert.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

constexpr auto kScanTimeout = std::chrono::seconds(120);

// Length-prefixed fields (u64 counts and byte strings) on the pipe.
class Wire {
 public:
  void put(std::uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    bytes_ += s;
  }
  void put(const std::vector<std::string>& list) {
    put(static_cast<std::uint64_t>(list.size()));
    for (const auto& s : list) put(s);
  }
  template <typename T>
  void put_raw(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size() * sizeof(T)));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put(const columnar::Column& c) {
    put(static_cast<std::uint64_t>(c.type));
    put(c.length);
    put_raw(c.validity);
    put_raw(c.data);
    put_raw(c.offsets);
  }
  void put(const cells::InputObsTable& t) {
    put(t.n_rows);
    put(static_cast<std::uint64_t>(t.columns.size()));
    for (const auto& c : t.columns) {
      put(c.name);
      put(static_cast<std::uint64_t>(c.kind));
      put(c.values);
      put(c.categories);
    }
    put(t.skipped);
  }
  void put(const cells::VarTable& t) {
    put(t.column_names);
    for (const auto& c : t.columns) put(c);
    put(t.index_name);
    put(t.index);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Unwire {
 public:
  explicit Unwire(std::string_view bytes) : rest_(bytes) {}
  std::uint64_t u64() {
    std::uint64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > rest_.size()) throw Error("scan result truncated");
    std::string s(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return s;
  }
  std::vector<std::string> strings() {
    const std::uint64_t n = u64();
    if (n > rest_.size()) throw Error("scan result truncated");
    std::vector<std::string> out;
    out.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(str());
    return out;
  }
  template <typename T>
  std::vector<T> raw() {
    const std::uint64_t n = u64();
    if (n > rest_.size() || n % sizeof(T) != 0) throw Error("scan result truncated");
    std::vector<T> out(n / sizeof(T));
    take(out.data(), n);
    return out;
  }
  columnar::Column column() {
    const std::uint64_t type = u64();
    if (type > static_cast<std::uint64_t>(columnar::ColumnType::String)) throw Error("scan result malformed");
    columnar::Column c(static_cast<columnar::ColumnType>(type));
    c.length = u64();
    c.validity = raw<std::uint8_t>();
    c.data = raw<std::byte>();
    c.offsets = raw<std::uint64_t>();
    try {
      c.check_shape();
    } catch (const UsageError&) {
      throw Error("scan result malformed");
    }
    return c;
  }
  cells::InputObsTable obs_table(const std::string& source) {
    cells::InputObsTable t;
    t.source = source;
    t.n_rows = u64();
    const std::uint64_t n = u64();
    if (n > rest_.size()) throw Error("scan result truncated");
    for (std::uint64_t i = 0; i < n; ++i) {
      cells::InputObsColumn c;
      c.name = str();
      const std::uint64_t kind = u64();
      if (kind > static_cast<std::uint64_t>(cells::ObsKind::String)) throw Error("scan result malformed");
      c.kind = static_cast<cells::ObsKind>(kind);
      c.values = column();
      c.categories = strings();
      t.columns.push_back(std::move(c));
    }
    t.skipped = strings();
    return t;
  }
  cells::VarTable var_table() {
    cells::VarTable t;
    t.column_names = strings();
    for (std::size_t i = 0; i < t.column_names.size(); ++i) t.columns.push_back(column());
    t.index_name = str();
    t.index = column();
    return t;
  }

 private:
  void take(void* out, std::size_t n) {
    if (n > rest_.size()) throw Error("scan result truncated");
    if (n > 0) std::memcpy(out, rest_.data(), n);
    rest_.remove_prefix(n);
  }
  std::string_view rest_;
};

void write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// The child's answer: 'O' + payload, or an error kind letter + message, path and structure.
std::string answer(const std::function<std::string()>& work) {
  const auto error = [&](char kind, const std::string& message, const std::string& path, const std::string& structure) {
    Wire e;
    e.put(message);
    e.put(path);
    e.put(structure);
    return std::string(1, kind) + e.bytes();
  };
  try {
    return "O" + work();
  } catch (const FormatError& e) {
    return error('F', e.what(), e.path(), e.structure());
  } catch (const UnsupportedError& e) {
    return error('U', e.what(), e.path(), e.structure());
  } catch (const UsageError& e) {
    return error('S', e.what(), e.path(), e.structure());
  } catch (const IoError& e) {
    return error('I', e.what(), e.path(), e.structure());
  } catch (const LimitError& e) {
    return error('L', e.what(), e.path(), e.structure());
  } catch (const Error& e) {
    return error('G', e.what(), e.path(), e.structure());
  } catch (const std::exception& e) {
    return error('G', e.what(), {}, {});
  }
}

[[noreturn]] void rethrow(char kind, std::string_view body) {
  Unwire u(body);
  const std::string message = u.str(), path = u.str(), structure = u.str();
  switch (kind) {
    case 'F': throw FormatError(message, path, structure);
    case 'U': throw UnsupportedError(message, path, structure);
    case 'S': throw UsageError(message, path, structure);
    case 'I': throw IoError(message, path, structure);
    case 'L': throw LimitError(message, path, structure);
    default: throw Error(message, path, structure);
  }
}

// Runs `work` in a child process and returns the bytes it produced (or rethrows its error).
std::string run_isolated(const std::string& path, const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(std::string("cannot start the scan process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // The child's only channel is the pipe: what a crashing libhdf5 (or a sanitizer's report of
    // it) prints must not reach the user's stderr, where the parent reports the one error line.
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
    write_all(fds[1], answer(work));
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + kScanTimeout;
  bool timed_out = false;
  for (char buffer[65536];;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline check above ends the wait
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw FormatError(path + ": libhdf5 did not finish reading the file's structure within " +
                          std::to_string(kScanTimeout.count()) + " s; the file is probably damaged",
                      path);
  if (WIFSIGNALED(status))
    throw FormatError(path + ": libhdf5 crashed (" + std::string(::strsignal(WTERMSIG(status))) +
                          ") reading the file's structure; the file is damaged",
                      path);
  if (reply.empty()) throw FormatError(path + ": the scan process ended without an answer", path);
  if (reply[0] != 'O') rethrow(reply[0], std::string_view(reply).substr(1));
  return reply.substr(1);
}

}  // namespace

H5adInputScan scan_h5ad_input_isolated(const std::string& path, const interop::H5adOptions& options,
                                       const H5adTablesRequest& request) {
  const std::string bytes = run_isolated(path, [&] {
    const auto s = interop::scan_h5ad(path, options);
    Wire w;
    w.put(s.matrix);
    w.put(static_cast<std::uint64_t>(s.layout));
    for (const std::uint64_t v : {s.n_cells, s.n_genes, s.nnz, std::uint64_t{s.real_values}}) w.put(v);
    w.put(s.var_names);
    w.put(s.layers);
    w.put(std::uint64_t{s.has_raw});
    w.put(s.not_converted);
    if (request.obs) {
      const auto obs = interop::read_h5ad_obs(path, request.options);
      w.put(obs.table);
      w.put(obs.names);
    }
    if (request.var) w.put(interop::read_h5ad_var(path, request.options));
    return w.bytes();
  });
  Unwire u(bytes);
  H5adInputScan r;
  interop::H5adScan& s = r.scan;
  s.path = path;
  s.matrix = u.str();
  s.layout = static_cast<interop::H5adLayout>(u.u64());
  s.n_cells = u.u64();
  s.n_genes = u.u64();
  s.nnz = u.u64();
  s.real_values = u.u64() != 0;
  s.var_names = u.strings();
  s.layers = u.strings();
  s.has_raw = u.u64() != 0;
  s.not_converted = u.strings();
  if (request.obs) {
    r.obs.emplace();
    r.obs->table = u.obs_table(path);
    r.obs->names = u.strings();
  }
  if (request.var) r.var = std::make_shared<cells::VarTable>(u.var_table());
  return r;
}

interop::H5adScan scan_h5ad_isolated(const std::string& path, const interop::H5adOptions& options) {
  return scan_h5ad_input_isolated(path, options, {}).scan;
}

interop::TenxH5Scan scan_tenx_h5_isolated(const std::string& path, const std::string& genome) {
  const std::string bytes = run_isolated(path, [&] {
    const auto s = interop::scan_tenx_h5(path, genome);
    Wire w;
    w.put(s.group);
    for (const std::uint64_t v : {s.n_cells, s.n_genes, s.nnz, std::uint64_t{s.real_values}}) w.put(v);
    w.put(s.gene_ids);
    w.put(s.gene_symbols);
    w.put(s.feature_types);
    w.put(s.genomes);
    w.put(s.barcodes);
    return w.bytes();
  });
  Unwire u(bytes);
  interop::TenxH5Scan s;
  s.path = path;
  s.group = u.str();
  s.n_cells = u.u64();
  s.n_genes = u.u64();
  s.nnz = u.u64();
  s.real_values = u.u64() != 0;
  s.gene_ids = u.strings();
  s.gene_symbols = u.strings();
  s.feature_types = u.strings();
  s.genomes = u.strings();
  s.barcodes = u.strings();
  return s;
}

}  // namespace tessera::cli

// A real HTTP server for the remote-read tests: nginx on 127.0.0.1 (loopback only) on a free port,
// serving one directory read-only with its ordinary static-file handling (Range requests, strong
// ETags, If-Match → 412). Every file nginx writes (config, pid, logs, temporaries) lives in a
// scratch directory removed with the object; the process is stopped by the destructor.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "support/testing.hpp"

namespace tessera::testing {

class NginxServer {
 public:
  // The nginx binary (TESSERA_NGINX, else /usr/sbin/nginx, else `nginx` on PATH), or "" when there
  // is none (tests then skip and say so; scripts/bootstrap.sh installs nginx-light).
  static std::string binary();

  // Starts nginx serving `root` and waits (bounded) until it answers. Throws std::runtime_error
  // with nginx's error log when it does not start.
  // With `tls`, nginx answers HTTPS with a fresh self-signed certificate for 127.0.0.1 (made with
  // the openssl CLI; `ca_file()` is its PEM).
  explicit NginxServer(const std::filesystem::path& root, bool tls = false);
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  int port() const noexcept { return port_; }
  std::filesystem::path ca_file() const { return scratch_ / "cert.pem"; }
  // http://127.0.0.1:PORT/relative (relative without a leading '/').
  std::string url(const std::string& relative = "") const;
  // Requests for /relative in the access log so far (any method). nginx logs a request after
  // answering it, so this first sends a marker request and waits until the marker is logged:
  // nginx serves one request at a time here, so every earlier request is logged by then.
  // `/status/503`, `/status/429` and `/status/403` always answer with that status.
  std::size_t requests_for(const std::string& relative) const;

 private:
  TempDir scratch_{"tessera-nginx"};
  int port_ = 0;
  bool tls_ = false;
  pid_t pid_ = -1;
};

// The server over conformance_dir(), started on first use in this process and stopped at exit;
// nullptr when nginx is not installed.
NginxServer* conformance_server();

// The reason tests give when they skip for want of nginx.
inline constexpr const char* kNoNginx = "nginx is not installed (scripts/bootstrap.sh installs nginx-light)";

}  // namespace tessera::testing

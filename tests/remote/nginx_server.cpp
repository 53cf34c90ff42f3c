#include "nginx_server.hpp"

#include "tessera/io/http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace tessera::testing {
namespace fs = std::filesystem;
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A port the kernel just handed out on 127.0.0.1 (free at that moment).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr = loopback(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string config(const fs::path& scratch, const fs::path& root, int port, bool tls) {
  const std::string s = scratch.string();
  return "daemon off;\n"
         "master_process off;\n"
         "worker_processes 1;\n"
         "pid " +
         s +
         "/nginx.pid;\n"
         "error_log " +
         s +
         "/error.log warn;\n"
         "events { worker_connections 64; }\n"
         "http {\n"
         "  access_log " +
         s +
         "/access.log;\n"
         "  client_body_temp_path " +
         s +
         "/body;\n"
         "  proxy_temp_path " +
         s +
         "/proxy;\n"
         "  fastcgi_temp_path " +
         s +
         "/fastcgi;\n"
         "  uwsgi_temp_path " +
         s +
         "/uwsgi;\n"
         "  scgi_temp_path " +
         s +
         "/scgi;\n"
         "  default_type application/octet-stream;\n"
         "  server {\n"
         "    listen 127.0.0.1:" +
         std::to_string(port) + (tls ? " ssl" : "") + ";\n" +
         (tls ? "    ssl_certificate " + s + "/cert.pem;\n    ssl_certificate_key " + s + "/key.pem;\n"
              : std::string()) +
         "    server_name localhost;\n"
         "    root " +
         fs::absolute(root).string() +
         ";\n"
         "    location / { }\n"
         // Fixed answers for the retry tests: 5xx and 429 are retried, 403 is not.
         "    location = /status/503 { return 503; }\n"
         "    location = /status/429 { return 429; }\n"
         "    location = /status/403 { return 403; }\n"
         "  }\n"
         "}\n";
}

}  // namespace

std::string NginxServer::binary() {
  if (const char* env = std::getenv("TESSERA_NGINX"); env && *env) return env;
  for (const char* candidate : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"})
    if (::access(candidate, X_OK) == 0) return candidate;
  return "";
}

NginxServer::NginxServer(const fs::path& root, bool tls) : tls_(tls) {
  const std::string nginx = binary();
  if (nginx.empty()) throw std::runtime_error("nginx is not installed");
  if (tls) {
    const RunResult made = run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                                        (scratch_ / "key.pem").string(), "-out", (scratch_ / "cert.pem").string()});
    if (made.rc != 0) throw std::runtime_error("openssl could not make a certificate: " + made.err);
  }
  // A port found free can be taken before nginx binds it: try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    const fs::path conf = scratch_ / "nginx.conf";
    write_file_text(conf, config(scratch_.path(), root, port_, tls));
    pid_ = start_process(
        {nginx, "-p", scratch_.path().string(), "-c", conf.string(), "-e", (scratch_ / "error.log").string()});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (answers(port_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)wait_process(pid_);
      pid_ = -1;
    }
  }
  std::string log;
  try {
    log = read_file_text(scratch_ / "error.log");
  } catch (const std::exception&) {
  }
  throw std::runtime_error("nginx did not start: " + log);
}

NginxServer::~NginxServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    (void)wait_process(pid_);
  }
}

NginxServer* conformance_server() {
  static const std::unique_ptr<NginxServer> server =
      NginxServer::binary().empty() ? nullptr : std::make_unique<NginxServer>(conformance_dir());
  return server.get();
}

std::size_t NginxServer::requests_for(const std::string& relative) const {
  static int markers = 0;
  const std::string marker = "log-marker-" + std::to_string(++markers);
  io::HttpOptions options;
  options.attempts = 1;
  (void)io::HttpStore(url(), options).exists(marker);  // a 404, logged after everything before it
  std::string log;
  for (int i = 0; i < 10'000; ++i) {  // bounded: 10 s at most
    try {
      log = read_file_text(scratch_ / "access.log");
    } catch (const std::exception&) {
      log.clear();
    }
    if (log.find(" /" + marker + " HTTP/") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::size_t n = 0;
  const std::string needle = " /" + relative + " HTTP/";
  for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::string NginxServer::url(const std::string& relative) const {
  return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_) + "/" + relative;
}

}  // namespace tessera::testing

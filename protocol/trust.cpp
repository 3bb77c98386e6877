#include "protocol/trust.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace hb::protocol {

listener_reach reach_of(int listen_fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  listener_reach out;
  if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    out.address = std::string("unknown (getsockname: ") + std::strerror(errno) + ")";
    return out; // unknown counts as reachable
  }
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_UNIX) {
    out.who = reach::unix_socket;
    out.address = reinterpret_cast<sockaddr_un*>(&addr)->sun_path;
  } else if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    out.who = (ntohl(in->sin_addr.s_addr) >> 24) == 127 ? reach::loopback : reach::network;
    out.address = std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    const uint8_t* b = in6->sin6_addr.s6_addr;
    bool mapped_loopback = IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127;
    out.who = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || mapped_loopback ? reach::loopback : reach::network;
    out.address = "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  } else {
    out.address = "address family " + std::to_string(addr.ss_family);
  }
  return out;
}

void require_trusted_dir(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot check " + what + " " + path + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error(what + " " + path + " is not a directory");
  bool ours = st.st_uid == ::geteuid();
  bool shared_tmp = st.st_uid == 0 && (st.st_mode & S_ISVTX);
  if (!ours && !(st.st_uid == 0 && (shared_tmp || !(st.st_mode & (S_IWGRP | S_IWOTH)))))
    throw std::runtime_error(what + " " + path + " belongs to uid " +
                             std::to_string(st.st_uid) + ", not to this user (uid " + std::to_string(::geteuid()) +
                             "); another user could replace what the daemon puts there");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !shared_tmp)
    throw std::runtime_error(what + " " + path +
                             " is writable by group or others; chmod go-w it (or choose another path)");
}

namespace {

// The absolute path's prefixes: "/a/b/c" -> "/", "/a", "/a/b", "/a/b/c".
std::vector<std::string> prefixes(const std::string& path) {
  std::string full = std::filesystem::absolute(path).lexically_normal().string();
  while (full.size() > 1 && full.back() == '/')
    full.pop_back();
  std::vector<std::string> out{"/"};
  for (size_t at = 1; at <= full.size(); ++at)
    if (at == full.size() || full[at] == '/')
      out.push_back(full.substr(0, at));
  if (out.size() > 1 && out.back() == "/")
    out.pop_back();
  return out;
}

void check_component(const std::string& part, const std::string& what, int depth) {
  struct stat st {};
  if (::lstat(part.c_str(), &st) != 0)
    throw std::runtime_error("cannot check " + what + " " + part + ": " + std::strerror(errno));
  if (!S_ISLNK(st.st_mode)) {
    require_trusted_dir(part, what);
    return;
  }
  // Only its owner (or root) can have made it say where it points.
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    throw std::runtime_error(what + " " + part + " is a symlink belonging to uid " + std::to_string(st.st_uid) +
                             ", not to this user (uid " + std::to_string(::geteuid()) +
                             "); another user could point it anywhere");
  std::error_code ec;
  auto target = std::filesystem::canonical(part, ec);
  if (ec)
    throw std::runtime_error("cannot check " + what + " " + part + ": " + ec.message());
  if (depth > 8)
    throw std::runtime_error(what + " " + part + ": too many symlinks");
  for (const auto& p : prefixes(target.string()))
    check_component(p, what, depth + 1);
}

bool exists_no_follow(const std::string& part) {
  struct stat st {};
  return ::lstat(part.c_str(), &st) == 0;
}

} // namespace

void require_trusted_path(const std::string& path, const std::string& what) {
  for (const auto& part : prefixes(path)) {
    if (!exists_no_follow(part))
      return; // what follows does not exist either
    check_component(part, what, 0);
  }
}

void require_trusted_tree(const std::string& path, const std::string& what) {
  require_trusted_path(path, what);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    if (entry.is_directory(ec) && !entry.is_symlink(ec))
      require_trusted_dir(entry.path().string(), what);
}

void make_trusted_dir(const std::string& path, const std::string& what) {
  // Each one checked before anything is made in it: a directory another
  // user made first (or swapped in) is refused before we write below it.
  for (const auto& part : prefixes(path)) {
    if (::mkdir(part.c_str(), 0700) == 0)
      ::chmod(part.c_str(), 0700); // usable by us whatever the umask
    else if (errno != EEXIST)
      throw std::runtime_error("cannot create " + what + " " + part + ": " + std::strerror(errno));
    check_component(part, what, 0);
  }
}

} // namespace hb::protocol

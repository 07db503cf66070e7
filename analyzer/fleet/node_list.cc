#include "analyzer/fleet/node_list.h"

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "rscore/host_port.h"

namespace rs::fleet {
namespace {

// Expands the first [A-B] of `item` (recursively for the rest).
rs::Result<std::vector<std::string>> Expand(const std::string& item) {
  const size_t open = item.find('[');
  if (open == std::string::npos) return std::vector<std::string>{item};
  const size_t close = item.find(']', open);
  if (close == std::string::npos) return rs::Error("'" + item + "': '[' without ']'");
  const std::string inside = item.substr(open + 1, close - open - 1);
  // An IPv6 address in brackets at the start ("[fd00::5]:7443") is no range.
  if (open == 0 && inside.find(':') != std::string::npos) return std::vector<std::string>{item};
  const size_t dash = inside.find('-');
  if (dash == std::string::npos) return rs::Error("'" + item + "': expected [FIRST-LAST]");
  const std::string a = inside.substr(0, dash), b = inside.substr(dash + 1);
  int lo = 0, hi = 0;
  auto pa = std::from_chars(a.data(), a.data() + a.size(), lo);
  auto pb = std::from_chars(b.data(), b.data() + b.size(), hi);
  if (a.empty() || b.empty() || pa.ec != std::errc() || pb.ec != std::errc() ||
      pa.ptr != a.data() + a.size() || pb.ptr != b.data() + b.size() || lo > hi || lo < 0) {
    return rs::Error("'" + item + "': expected [FIRST-LAST] with FIRST <= LAST");
  }
  if (hi - lo >= 4096) return rs::Error("'" + item + "': more than 4096 nodes in one range");
  const size_t width = a.size() > 1 && a[0] == '0' ? a.size() : 0;  // node[01-16]
  std::vector<std::string> out;
  for (int i = lo; i <= hi; ++i) {
    std::string n = std::to_string(i);
    if (n.size() < width) n = std::string(width - n.size(), '0') + n;
    ASSIGN_OR_RETURN(auto rest, Expand(item.substr(close + 1)));
    for (const std::string& r : rest) out.push_back(item.substr(0, open) + n + r);
  }
  return out;
}

rs::Result<std::vector<NodeAddress>> Unique(std::vector<NodeAddress> nodes) {
  std::set<std::string> seen, names;
  for (const NodeAddress& n : nodes) {
    if (!seen.insert(n.address()).second)
      return rs::Error("node " + n.address() + " is listed twice");
    if (!n.name.empty() && !names.insert(n.name).second) {
      return rs::Error("the name " + n.name + " is given to two nodes");
    }
  }
  if (nodes.empty()) return rs::Error("no nodes listed");
  return nodes;
}

}  // namespace

std::string NodeAddress::address() const { return rs::FormatHostPort(host, port); }

rs::Result<NodeAddress> ParseAddress(std::string_view text) {
  ASSIGN_OR_RETURN(rs::HostPort hp, rs::ParseHostPort(text));
  if (hp.host.empty()) return rs::Error("'" + std::string(text) + "': no host");
  NodeAddress a;
  a.host = std::move(hp.host);
  if (hp.port) a.port = hp.port;
  return a;
}

rs::Result<std::vector<NodeAddress>> ParseHostList(std::string_view list) {
  std::vector<NodeAddress> out;
  std::string item;
  int depth = 0;
  auto flush = [&]() -> rs::Result<void> {
    if (item.empty()) return rs::Ok();
    ASSIGN_OR_RETURN(auto expanded, Expand(item));
    for (const std::string& e : expanded) {
      auto a = ParseAddress(e);
      if (!a.ok()) return a.error();
      out.push_back(*a);
    }
    item.clear();
    return rs::Ok();
  };
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if ((c == ',' || c == ' ' || c == '\n' || c == '\t') && depth == 0) {
      RETURN_IF_ERROR(flush());
    } else {
      item += c;
    }
  }
  RETURN_IF_ERROR(flush());
  return Unique(std::move(out));
}

rs::Result<std::vector<NodeAddress>> ParseNodeFile(std::string_view text, const std::string& path) {
  std::vector<NodeAddress> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    const std::string where = path + ":" + std::to_string(n);
    if (w.size() > 2) return rs::Error(where + ": expected NAME ADDRESS[:PORT] or ADDRESS[:PORT]");
    auto a = ParseAddress(w.back());
    if (!a.ok()) return a.error().Wrap(where);
    if (w.size() == 2) {
      for (char c : w[0]) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
          return rs::Error(where + ": '" + w[0] + "' is not a node name ([A-Za-z0-9._-])");
        }
      }
      a->name = w[0];
    }
    out.push_back(*a);
  }
  auto u = Unique(std::move(out));
  if (!u.ok()) return u.error().Wrap(path);
  return u;
}

rs::Result<std::vector<NodeAddress>> ParseNodes(const std::string& spec) {
  struct stat st {};
  if (stat(spec.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    std::ifstream in(spec);
    std::ostringstream s;
    s << in.rdbuf();
    if (!in) return rs::Error(spec + ": cannot read the node list");
    return ParseNodeFile(s.str(), spec);
  }
  if (spec.find_first_of(",[:") == std::string::npos && spec.find('/') != std::string::npos) {
    return rs::Error(spec + ": no such file (give a node list file or HOST[:PORT],...)");
  }
  return ParseHostList(spec);
}

}  // namespace rs::fleet

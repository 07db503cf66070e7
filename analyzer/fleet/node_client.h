// One node as rankscope-fleet sees it: an HTTPS client (cpp-httplib over OpenSSL, TLS 1.3,
// the node's certificate checked against --ca and its name or address) that measures the
// node's clock, runs a query, lists and downloads bundles. Every failure comes back as an error
// that says why in words (down, too slow, TLS refused and by whom), for the warning that names
// the node.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "analyzer/fleet/node_list.h"
#include "rscore/fleet_wire.h"
#include "rscore/result.h"
#include "rscore/tls.h"
#include "rscore/wire_clock.h"

namespace httplib {
class SSLClient;
}

namespace rs::fleet {

struct ClientAuth {
  rs::tls::Files tls;  // ca: the nodes' CA; cert/key: this workstation's (mutual TLS)
  std::string token;   // bearer token, when the nodes want one
};

// Checks the files once, before any node is asked (an error here is the user's to fix, not a
// node's).
rs::Result<void> CheckClientAuth(const ClientAuth& auth);

class NodeClient {
 public:
  // `timeout_ns`: how long the node may take, counted from this object's creation, for
  // everything asked of it (see Deadline); `per_request` makes it the time of each request
  // instead (downloads, whose length depends on the bundle).
  NodeClient(NodeAddress node, const ClientAuth& auth, int64_t timeout_ns,
             bool per_request = false);
  ~NodeClient();
  NodeClient(const NodeClient&) = delete;
  NodeClient& operator=(const NodeClient&) = delete;

  // `exchanges` round trips to GET /v1/time over one connection; the fastest is kept.
  rs::Result<rs::WireClock> MeasureClock(int exchanges);
  rs::Result<rs::wire::QueryReply> Query(rs::wire::QueryRequest req);
  // The bundles overlapping [since, until]; with `summaries`, their summaries (made by the node
  // on request: GET /v1/summaries), listed with the summaries' sizes and checksums.
  rs::Result<rs::wire::BundleList> ListBundles(int64_t since_ns, int64_t until_ns,
                                               bool summaries = false);

  struct Download {
    int64_t bytes = 0;           // the file's size
    int64_t transferred = 0;     // bytes that came over the network this time
    int64_t resumed_from = 0;    // a partial download's size it went on from
    bool already_there = false;  // `dest` existed with the right checksum
  };
  // `entry` into `dest` (through `dest`.part, resumed when present), its checksum verified;
  // a mismatch removes the partial file.
  // With `summary`, the entry's summary (GET /v1/summary/NAME), as ListBundles listed it.
  rs::Result<Download> Fetch(const rs::wire::BundleEntry& entry, const std::string& dest,
                             bool summary = false);

  // From another thread: ends the request in flight (the node is past its time).
  void Stop();
  // The node's own name once it has answered (else empty).
  const std::string& answered_name() const { return answered_name_; }
  const NodeAddress& node() const { return node_; }

 private:
  rs::Result<void> Prepare();  // sets the timeouts from what is left
  rs::Error Failure(int error, const std::string& doing) const;
  rs::Error HttpError(int status, const std::string& body, const std::string& doing) const;
  int64_t LeftNs() const;

  NodeAddress node_;
  const ClientAuth& auth_;
  int64_t timeout_ns_;
  bool per_request_;
  int64_t deadline_ns_;  // steady clock
  std::unique_ptr<httplib::SSLClient> http_;
  rs::Result<void> setup_ = rs::Ok();
  std::string alert_;  // the last fatal TLS alert of the connection (set by OpenSSL's callback)
  std::string answered_name_;
  mutable std::mutex stop_mu_;
  bool stopped_ = false;
};

int64_t SteadyNowNs();
int64_t RealtimeNowNs();

}  // namespace rs::fleet

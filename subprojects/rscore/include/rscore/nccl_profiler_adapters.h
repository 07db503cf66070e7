// NCCL's adapters from a profiler event of a newer API version to an older plugin table, as
// NCCL passes its own events down (src/plugin/profiler/profiler_v*.cc): what the test bed's NCCL
// and the plugin's test driver use to call a plugin of any version exactly as NCCL would.
#pragma once

#include <cstddef>
#include <cstring>

#include "rscore/nccl_profiler.h"

namespace rs {

// NCCL's adapters to older tables, as NCCL 2.31 passes its events down. Every member an older
// version has is the same member, at the same place, in the newer one's union (the newer
// versions only add members at the end of a struct, and new structs): copying the older
// struct's size of the newer member is copying its members.
template <typename Older, typename Newer>
inline void NcclProfilerCopyMember(Older* out, const Newer& in) {
  std::memcpy(static_cast<void*>(out), static_cast<const void*>(&in), sizeof(Older));
}

// A v7 event as NCCL's v6 adapter passes it: false for a KernelPhase event (v6 has none);
// user tags, the kernel variant and isSymColl are dropped.
inline bool NcclProfilerDescrV6(const ncclProfilerEventDescr_v7_t& d,
                                ncclProfilerEventDescr_v6_t* out) {
  ncclProfilerEventDescr_v6_t o;
  std::memset(&o, 0, sizeof(o));
  o.type = d.type;
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  switch (d.type) {
    case ncclProfileGroup:
    case ncclProfileProxyCtrl:
      break;
    case ncclProfileGroupApi:
      NcclProfilerCopyMember(&o.groupApi, d.groupApi);
      break;
    case ncclProfileCollApi:
      NcclProfilerCopyMember(&o.collApi, d.collApi);
      break;
    case ncclProfileP2pApi:
      NcclProfilerCopyMember(&o.p2pApi, d.p2pApi);
      break;
    case ncclProfileKernelLaunch:
      NcclProfilerCopyMember(&o.kernelLaunch, d.kernelLaunch);
      break;
    case ncclProfileColl:
      NcclProfilerCopyMember(&o.coll, d.coll);
      break;
    case ncclProfileP2p:
      NcclProfilerCopyMember(&o.p2p, d.p2p);
      break;
    case ncclProfileProxyOp:
      NcclProfilerCopyMember(&o.proxyOp, d.proxyOp);
      break;
    case ncclProfileProxyStep:
      NcclProfilerCopyMember(&o.proxyStep, d.proxyStep);
      break;
    case ncclProfileKernelCh:
      NcclProfilerCopyMember(&o.kernelCh, d.kernelCh);
      break;
    case ncclProfileNetPlugin:
      NcclProfilerCopyMember(&o.netPlugin, d.netPlugin);
      break;
    case ncclProfileCeColl:
      NcclProfilerCopyMember(&o.ceColl, d.ceColl);
      break;
    case ncclProfileCeSync:
      NcclProfilerCopyMember(&o.ceCollSync, d.ceCollSync);
      break;
    case ncclProfileCeBatch:
      NcclProfilerCopyMember(&o.ceCollBatch, d.ceCollBatch);
      break;
    default:
      return false;  // KernelPhase
  }
  *out = o;
  return true;
}

// A v6 event as NCCL's v5 adapter passes it: false for the copy-engine events (v5 has none;
// NCCL's adapter also clears their bits from the mask a v5 plugin returns).
inline bool NcclProfilerDescrV5(const ncclProfilerEventDescr_v6_t& d,
                                ncclProfilerEventDescr_v5_t* out) {
  if (d.type == ncclProfileCeColl || d.type == ncclProfileCeSync || d.type == ncclProfileCeBatch) {
    return false;
  }
  ncclProfilerEventDescr_v5_t o;
  std::memset(&o, 0, sizeof(o));
  o.type = d.type;
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  // v5's union is v6's without the copy-engine members: the same bytes for every other type.
  std::memcpy(static_cast<void*>(&o.coll), static_cast<const void*>(&d.coll),
              sizeof(o) - offsetof(ncclProfilerEventDescr_v5_t, coll));
  *out = o;
  return true;
}

// A v7 event as it reaches a v5 (or, through NcclProfilerDescrV4, a v4) plugin.
inline bool NcclProfilerDescrV5(const ncclProfilerEventDescr_v7_t& d,
                                ncclProfilerEventDescr_v5_t* out) {
  ncclProfilerEventDescr_v6_t v6;
  return NcclProfilerDescrV6(d, &v6) && NcclProfilerDescrV5(v6, out);
}

// A v5 event as NCCL's v4 adapter passes it to a v4 plugin: the same members, Coll's and P2p's
// parent is their Group event; false for the API events (GroupApi, CollApi, P2pApi,
// KernelLaunch), which v4 does not have.
inline bool NcclProfilerDescrV4(const ncclProfilerEventDescr_v5_t& d,
                                ncclProfilerEventDescr_v4_t* out) {
  ncclProfilerEventDescr_v4_t o;
  std::memset(&o, 0, sizeof(o));
  o.type = static_cast<uint8_t>(d.type);
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  switch (d.type) {
    case ncclProfileGroup:
    case ncclProfileProxyCtrl:
      break;
    case ncclProfileColl:
      o.coll.seqNumber = d.coll.seqNumber;
      o.coll.func = d.coll.func;
      o.coll.sendBuff = d.coll.sendBuff;
      o.coll.recvBuff = d.coll.recvBuff;
      o.coll.count = d.coll.count;
      o.coll.root = d.coll.root;
      o.coll.datatype = d.coll.datatype;
      o.coll.nChannels = d.coll.nChannels;
      o.coll.nWarps = d.coll.nWarps;
      o.coll.algo = d.coll.algo;
      o.coll.proto = d.coll.proto;
      o.parentObj = d.coll.parentGroup;
      break;
    case ncclProfileP2p:
      o.p2p.func = d.p2p.func;
      o.p2p.buff = d.p2p.buff;
      o.p2p.count = d.p2p.count;
      o.p2p.datatype = d.p2p.datatype;
      o.p2p.peer = d.p2p.peer;
      o.p2p.nChannels = d.p2p.nChannels;
      o.parentObj = d.p2p.parentGroup;
      break;
    case ncclProfileProxyOp:
      o.proxyOp.pid = d.proxyOp.pid;
      o.proxyOp.channelId = d.proxyOp.channelId;
      o.proxyOp.peer = d.proxyOp.peer;
      o.proxyOp.nSteps = d.proxyOp.nSteps;
      o.proxyOp.chunkSize = d.proxyOp.chunkSize;
      o.proxyOp.isSend = d.proxyOp.isSend;
      break;
    case ncclProfileProxyStep:
      o.proxyStep.step = d.proxyStep.step;
      break;
    case ncclProfileKernelCh:
      o.kernelCh.channelId = d.kernelCh.channelId;
      o.kernelCh.pTimer = d.kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      o.netPlugin.id = d.netPlugin.id;
      o.netPlugin.data = d.netPlugin.data;
      break;
    default:
      return false;  // API events do not exist in v4
  }
  *out = o;
  return true;
}

}  // namespace rs

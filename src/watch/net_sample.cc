#include "watch/net_sample.h"

#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace upguard::watch {
namespace {

// The sum of overlimits and drops of every queue discipline on the interfaces `wanted` (by
// index), from one RTM_GETQDISC dump.
uint64_t QdiscThrottled(const std::set<int>& wanted) {
  int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) return 0;
  timeval timeout{0, 200000};  // never hold the heartbeat
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  struct {
    nlmsghdr header;
    tcmsg message;
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
  request.header.nlmsg_type = RTM_GETQDISC;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.message.tcm_family = AF_UNSPEC;
  uint64_t total = 0;
  if (send(sock, &request, request.header.nlmsg_len, 0) < 0) {
    close(sock);
    return 0;
  }
  alignas(nlmsghdr) char buffer[16384];
  for (bool done = false; !done;) {
    const ssize_t got = recv(sock, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    int left = int(got);
    for (auto* msg = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(msg, left);
         msg = NLMSG_NEXT(msg, left)) {
      if (msg->nlmsg_type == NLMSG_DONE || msg->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      if (msg->nlmsg_type != RTM_NEWQDISC) continue;
      auto* tc = static_cast<tcmsg*>(NLMSG_DATA(msg));
      if (!wanted.count(tc->tcm_ifindex)) continue;
      int attr_len = int(msg->nlmsg_len) - int(NLMSG_LENGTH(sizeof(tcmsg)));
      for (auto* attr =
               reinterpret_cast<rtattr*>(reinterpret_cast<char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg)));
           RTA_OK(attr, attr_len); attr = RTA_NEXT(attr, attr_len)) {
        if (attr->rta_type != TCA_STATS2) continue;
        int inner_len = int(RTA_PAYLOAD(attr));
        for (auto* inner = static_cast<rtattr*>(RTA_DATA(attr)); RTA_OK(inner, inner_len);
             inner = RTA_NEXT(inner, inner_len)) {
          if (inner->rta_type != TCA_STATS_QUEUE || RTA_PAYLOAD(inner) < sizeof(gnet_stats_queue)) {
            continue;
          }
          gnet_stats_queue queue;
          std::memcpy(&queue, RTA_DATA(inner), sizeof(queue));
          total += uint64_t(queue.overlimits) + uint64_t(queue.drops);
        }
      }
    }
  }
  close(sock);
  return total;
}

}  // namespace

NetSample ReadNetSample() {
  NetSample sample;
  std::ifstream dev("/proc/self/net/dev");
  std::string line;
  std::set<int> indexes;
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  while (std::getline(dev, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo" || name.size() >= IFNAMSIZ) continue;
    std::istringstream fields(line.substr(colon + 1));
    uint64_t values[16] = {};
    for (uint64_t& value : values) fields >> value;
    sample.rx_bytes += values[0];
    sample.tx_bytes += values[8];
    sample.links += 1;
    if (const unsigned index = if_nametoindex(name.c_str()); index != 0) indexes.insert(int(index));
    if (sock >= 0) {
      ifreq request{};
      std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
      if (ioctl(sock, SIOCGIFFLAGS, &request) == 0 && (request.ifr_flags & IFF_UP) &&
          (request.ifr_flags & IFF_RUNNING)) {
        sample.links_up += 1;
      }
    }
  }
  if (sock >= 0) close(sock);
  sample.throttled = QdiscThrottled(indexes);
  return sample;
}

}  // namespace upguard::watch

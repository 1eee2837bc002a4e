#include "cli/watch_loop.h"

#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

namespace upguard {
namespace {

constexpr auto kInterval = std::chrono::milliseconds(100);

bool Stops(const watch::Alert& alert) {
  return alert.trigger == "stall" || alert.trigger == "dead" || alert.trigger == "mismatch";
}

}  // namespace

void PrintAlerts(const std::vector<watch::Alert>& alerts) {
  for (const watch::Alert& alert : alerts) {
    std::fprintf(stderr, "%s\n", watch::AlertLine(alert).c_str());
  }
  std::fflush(stderr);
}

void PrintWarnings(watch::Monitor& monitor) {
  for (const std::string& warning : monitor.TakeWarnings()) {
    std::fprintf(stderr, "upguard watch: warning: %s\n", warning.c_str());
  }
  std::fflush(stderr);
}

int WaitForCommand(pid_t pid, const std::function<void()>& each_poll) {
  struct sigaction ignore = {}, old_int = {}, old_term = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  int wait_status = 0;
  if (!each_poll) {
    while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  } else {
    while (true) {
      const pid_t done = waitpid(pid, &wait_status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      each_poll();
      std::this_thread::sleep_for(kInterval);
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return wait_status;
}

int WaitWatching(pid_t pid, watch::Monitor& monitor, bool stop_on_alert,
                 const std::function<void()>& each_poll) {
  // Ctrl-C reaches the command through the terminal: let it end and report its end.
  struct sigaction ignore = {}, old_int = {}, old_term = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  int wait_status = 0;
  bool stopped = false;
  auto stop_sent = std::chrono::steady_clock::time_point();
  while (true) {
    const pid_t done = waitpid(pid, &wait_status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (stopped) {  // what follows is our own doing: the ranks we stopped
      std::this_thread::sleep_for(kInterval);
      if (std::chrono::steady_clock::now() - stop_sent > std::chrono::seconds(5)) {
        kill(-pid, SIGKILL);  // a rank stopped (SIGSTOP) or ignoring SIGTERM
      }
      continue;
    }
    if (each_poll) each_poll();
    auto fresh = monitor.Poll();
    if (!fresh.ok()) {
      std::fprintf(stderr, "upguard watch: %s\n", fresh.status().message().c_str());
    } else {
      PrintAlerts(*fresh);
      PrintWarnings(monitor);
      for (const watch::Alert& alert : *fresh) {
        if (stop_on_alert && Stops(alert) && !stopped) {
          std::fprintf(stderr, "upguard watch: stopping the command (--stop-on-alert)\n");
          kill(-pid, SIGTERM);
          stopped = true;
          stop_sent = std::chrono::steady_clock::now();
        }
      }
    }
    std::this_thread::sleep_for(kInterval);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (stopped) {
    kill(-pid, SIGKILL);  // what is left of the group
  } else if (auto last = monitor.Poll(); last.ok()) {
    PrintAlerts(*last);
  }
  return wait_status;
}

}  // namespace upguard

/*
 * Constant-rate HTTP/1.1 load for sdk/node/bench/overhead.ts --isolate: requests sent 1/rate
 * apart on keep-alive connections (a new one opened when all are busy), one thread, no garbage
 * collector. Between sends it sleeps in epoll_pwait2 until the next send is due or an answer
 * arrives (nanosecond timeout), so run at real-time priority (chrt) it wakes on time and leaves
 * its core to other threads the rest of the time.
 *
 *   loadc <host> <port> <rate> <seconds> [path]
 *   loadc serve <port>        (port 0: any free port, printed as "listening <port>")
 *
 * Prints one line per answered request, "<due time µs from start> <latency µs from send>", then
 * "# errors <n>" and "# start <start on CLOCK_MONOTONIC, µs>" (the clock of Node's hrtime).
 *
 * `serve` answers every request on 127.0.0.1:<port> with the hello-world server's answer, from
 * one epoll loop: the machine's own latency floor, with no runtime of any kind in the server.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 1024

typedef struct {
  int fd;
  double due, sent;
  size_t len;
  char buf[4096];
} conn_t;

static conn_t conns[MAXC];
static int nconn = 0, freelist[MAXC], nfree = 0, ep;
static struct sockaddr_in addr;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int open_conn(void) {
  if (nconn >= MAXC) return -1;
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    perror("loadc: connect");
    exit(2);
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int i = nconn++;
  conns[i].fd = fd;
  conns[i].len = 0;
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return i;
}

static int serve(int port) {
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 512) != 0) {
    perror("loadc serve");
    return 2;
  }
  socklen_t al = sizeof a;
  getsockname(ls, (struct sockaddr *)&a, &al);
  printf("listening %d\n", ntohs(a.sin_port));
  fflush(stdout);
  int sep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[64];
  epoll_ctl(sep, EPOLL_CTL_ADD, ls, &ev);
  static const char resp[] = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 17\r\n"
                             "Connection: keep-alive\r\n\r\n{\"hello\":\"world\"}";
  char buf[8192];
  for (;;) {
    int n = epoll_wait(sep, evs, 64, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ls) {
        int c = accept(ls, 0, 0);
        if (c < 0) continue;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
        epoll_ctl(sep, EPOLL_CTL_ADD, c, &e);
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) {
        close(fd);
        continue;
      }
      // One answer per request head in what arrived (the load sends one at a time per connection).
      for (ssize_t k = 3; k < r; k++)
        if (buf[k] == '\n' && buf[k - 1] == '\r' && buf[k - 2] == '\n' && buf[k - 3] == '\r')
          if (write(fd, resp, sizeof resp - 1) < 0) break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(atoi(argv[2]));
  if (argc < 5) {
    fprintf(stderr, "usage: loadc <host> <port> <rate> <seconds> [path]\n");
    return 2;
  }
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)atoi(argv[2]));
  if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
    fprintf(stderr, "loadc: not an IPv4 address: %s\n", argv[1]);
    return 2;
  }
  double rate = atof(argv[3]), secs = atof(argv[4]);
  const char *path = argc > 5 ? argv[5] : "/hello?x=1";
  char req[512];
  int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%s\r\nx-bench: 1\r\n\r\n", path, argv[1], argv[2]);
  ep = epoll_create1(0);
  for (int i = 0; i < 16; i++) freelist[nfree++] = open_conn();
  long total = (long)(rate * secs), sentn = 0, done = 0, errors = 0;
  double *lat = malloc(sizeof(double) * (size_t)total), *dues = malloc(sizeof(double) * (size_t)total);
  double interval = 1e6 / rate, start = now_us(), next = start;
  struct epoll_event evs[64];
  while (done + errors < total) {
    double t = now_us();
    while (sentn < total && next <= t) {
      int i = nfree > 0 ? freelist[--nfree] : open_conn();
      conn_t *c = &conns[i];
      c->due = next;
      c->sent = now_us();
      c->len = 0;
      if (write(c->fd, req, (size_t)reqlen) != reqlen) errors++;
      sentn++;
      next += interval;
    }
    double wait = sentn < total ? next - now_us() : 1000.0;
    if (wait < 0) wait = 0;
    struct timespec to = {.tv_sec = (time_t)(wait / 1e6), .tv_nsec = (long)(wait * 1e3) % 1000000000L};
    int n = epoll_pwait2(ep, evs, 64, &to, NULL);
    // Kernels before 5.11 have no epoll_pwait2: poll without sleeping instead (a busy core).
    if (n < 0 && errno == ENOSYS) n = epoll_wait(ep, evs, 64, 0);
    for (int k = 0; k < n; k++) {
      int i = (int)evs[k].data.u32;
      conn_t *c = &conns[i];
      ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
      if (r <= 0) {
        fprintf(stderr, "loadc: connection closed (read %zd, errno %d)\n", r, errno);
        return 3;
      }
      c->len += (size_t)r;
      c->buf[c->len] = 0;
      char *h = strstr(c->buf, "\r\n\r\n");
      if (!h) continue;
      char *cl = strcasestr(c->buf, "content-length:");
      size_t body = cl && cl < h ? strtoul(cl + 15, 0, 10) : 0;
      if (c->len < (size_t)(h + 4 - c->buf) + body) continue;
      lat[done] = now_us() - c->sent;
      dues[done] = c->due - start;
      done++;
      c->len = 0;
      freelist[nfree++] = i;
    }
  }
  for (long i = 0; i < done; i++) printf("%.0f %.1f\n", dues[i], lat[i]);
  printf("# errors %ld\n# start %.0f\n", errors, start);
  return 0;
}

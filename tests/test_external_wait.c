// test_external_wait.c: the external runner's wait on its program (trial/external_child.c),
// with real child processes: a program's exit ends the leader's wait at once, not at the
// end of the look's interval (a 5-s interval, a program of 0.05 s: back well before 5 s),
// and the program is then reaped with its status; a program still running holds the wait
// to its interval; once it exited (its group may still be ending) the wait is a plain
// sleep of the interval, not a return at once that would spin.
// modules: trial
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/util.h"
#include "trial/external_impl.h"

// A Run that starts `sh -c script`, its output to /dev/null.
static void start(Run *run, const char *script) {
    *run = (Run){.out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC), .err_fd = open("/dev/null", O_WRONLY | O_CLOEXEC),
                 .cgroup_procs = -1, .pidfd = -1};
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL}, *envp[] = {"PATH=/usr/bin:/bin", NULL};
    CHECK(external_spawn(run, argv, envp) == 0, "spawn %s: %s", script, run->why);
    CHECK(run->pidfd >= 0, "no pidfd for the program (pidfd_open needs Linux 5.3)");
}

static void stop(Run *run) {
    close(run->out_fd), close(run->err_fd);
    if (run->pidfd >= 0) close(run->pidfd);
}

// Whether the program's group is gone within 2 s of looks (as the runner's loop looks).
static int gone_soon(Run *run) {
    for (int k = 0; k < 200; k++) {
        if (external_group_gone(run)) return 1;
        external_wait(run, 10);
    }
    return 0;
}

// Seconds one external_wait(run, ms) took.
static double timed_wait(Run *run, int ms) {
    const double t = now_seconds();
    external_wait(run, ms);
    return now_seconds() - t;
}

int main(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);  // as the runner: the program's orphans come back to be reaped
    Run run;

    // An exit ends the wait: a sleep loop would return after the whole 5 s.
    start(&run, "sleep 0.05");
    double took = timed_wait(&run, 5000);
    CHECK(took < 2.0, "the program ended after 0.05 s, the wait with a 5-s interval took %.3f s", took);
    CHECK(gone_soon(&run), "after its exit the program's group is not gone");
    CHECK(run.exited && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "the program's status: exited %d, %d",
          run.exited, run.status);
    // Exited: the wait sleeps its interval (a readable pidfd polled again would return at once).
    took = timed_wait(&run, 100);
    CHECK(took >= 0.09, "after the exit a 0.1-s wait returned in %.3f s: the leader would spin", took);
    stop(&run);

    // A program still running holds the wait to its interval.
    start(&run, "sleep 5");
    took = timed_wait(&run, 100);
    CHECK(took >= 0.09 && took < 4.0, "a running program: a 0.1-s wait took %.3f s", took);
    CHECK(external_group_gone(&run) == 0, "the running program's group is gone");
    kill(-run.pid, SIGKILL);
    took = timed_wait(&run, 5000);
    CHECK(took < 2.0, "the killed program: the wait with a 5-s interval took %.3f s", took);
    CHECK(gone_soon(&run) && WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL,
          "the killed program was not reaped with its signal (status %d)", run.status);
    stop(&run);
    return check_report("test_external_wait");
}

// attnsweep slurm: write a Slurm batch script that runs a sweep under mpirun and requeues
// itself when its time limit or a preemption stops it (and submit it with --submit).
//
// The script is scripts/slurm/attnsweep.sbatch with the #SBATCH lines and the settings
// filled in: everything from its "# ---- body" line on is the template's, compiled in at
// build time (tests/test_slurm.sh compares them), so the documented template and the
// generated scripts cannot drift apart.
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/outfile.h"
#include "common/util.h"
#include "space/space.h"
#include "sweep/sweep.h"

extern char **environ;

// Seconds before the time limit at which Slurm sends SIGUSR1 (--signal=B:USR1@...), and
// the shortest time limit that leaves room for work around it.
enum { SIGNAL_LEAD_SECONDS = 120, MIN_TIME_SECONDS = 300, MAX_COUNT = 1000000 };

// The part of every script after the settings: the template's, from its "# ---- body"
// line on, compiled in from scripts/slurm/attnsweep.sbatch (CMakeLists.txt, embed_text.cmake).
extern const char slurm_script_body[];

static const char *const launchers[] = {"mpirun", "srun", NULL};

typedef struct {
    const char *sweep, *output, *script, *time, *partition, *account, *mem;
    int nodes, ntasks_per_node, group_size, max_requeues;
    int array;                         // --array N: N jobs sharing the sweep (0: one job)
    int overcommit, submit, launcher;  // launcher: an index of launchers
    ArgList sbatch_lines, setup;       // verbatim #SBATCH options; the setup function's lines
    int gpus, cpus;                    // the sweep's resources per worker group (0: none given)
    int gpus_per_group;                // --gpus-per-group (-1: the YAML's resources.gpus)
} SlurmOptions;

// One run of decimal digits at *s: its value (or -1), advancing *s.
static long digits(const char **s) {
    if (!isdigit((unsigned char)**s)) return -1;
    long v = 0;
    while (isdigit((unsigned char)**s)) {
        if (v > 100000000L) return -1;
        v = 10 * v + (**s - '0');
        (*s)++;
    }
    return v;
}

// Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED /
// INFINITE (*seconds = -1). Returns 0, or -1 when text is none of them.
static int parse_time(const char *text, long *seconds) {
    if (!strcasecmp(text, "unlimited") || !strcasecmp(text, "infinite")) {
        *seconds = -1;
        return 0;
    }
    const char *s = text, *dash = strchr(text, '-');
    long days = 0, f[3];
    int n = 0;
    if (dash) {
        days = digits(&s);
        if (days < 0 || s != dash) return -1;
        s++;
    }
    for (;;) {  // up to three ':'-separated fields
        if (n == 3) return -1;
        long v = digits(&s);
        if (v < 0) return -1;
        f[n++] = v;
        if (*s != ':') break;
        s++;
    }
    if (*s) return -1;
    // Every field but the leading one is bounded: hours after a day < 24, minutes and
    // seconds after another field < 60.
    if (dash && f[0] > 23) return -1;
    for (int k = 1; k < n; k++)
        if (f[k] > 59) return -1;
    long h = 0, m = 0, sec = 0;
    if (dash)
        h = f[0], m = n > 1 ? f[1] : 0, sec = n > 2 ? f[2] : 0;
    else if (n == 1)
        m = f[0];
    else if (n == 2)
        m = f[0], sec = f[1];
    else
        h = f[0], m = f[1], sec = f[2];
    *seconds = ((days * 24 + h) * 60 + m) * 60 + sec;
    return 0;
}

// The sweep's name (its `name:`, or the file's stem) and its resources per worker group
// (o->gpus: --gpus-per-group over the YAML's; o->cpus), after loading and validating the
// whole search space here, so that a mistake shows now and not when the job starts. Job and file names keep letters,
// digits, '_', '-' and '.'; anything else becomes '_'.
static char *sweep_name(SlurmOptions *o) {
    SweepSpec spec;
    char err[1024];
    if (space_load(&spec, o->sweep, err, sizeof err) != 0) die(EXIT_BADINPUT, "slurm: %s", err);
    if (o->gpus_per_group >= 0 && !space_is_program(&spec))
        die(EXIT_BADINPUT, "slurm: --gpus-per-group applies to a sweep of a program (the built-in engine trains on CPUs)");
    char *name = xstrdup(spec.name && spec.name[0] ? spec.name : "sweep");
    o->gpus = o->gpus_per_group >= 0 ? o->gpus_per_group : spec.program.gpus;
    o->cpus = spec.program.cpus;
    space_free(&spec);
    for (char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') *c = '_';
    if (name[0] == '.' || name[0] == '-') name[0] = '_';
    return name;
}

// #SBATCH lines cannot quote: a path there must not need quoting.
static void check_sbatch_text(const char *what, const char *text) {
    for (const char *c = text; *c; c++)
        if (iscntrl((unsigned char)*c)) die(EXIT_BADINPUT, "slurm: %s has a control character", what);
    for (const char *c = text; *c; c++)
        if (isspace((unsigned char)*c) || strchr("\"'\\%", *c))
            die(EXIT_BADINPUT,
                "slurm: %s '%s' cannot go on an #SBATCH line (no spaces, quotes, backslashes or '%%')", what,
                text);
}

// An account or partition name: letters, digits, '_', '-', '.', ','.
static void check_name(const char *opt, const char *text) {
    if (!text[0]) die(EXIT_BADINPUT, "slurm: %s needs a name", opt);
    for (const char *c = text; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_-.,", *c))
            die(EXIT_BADINPUT, "slurm: %s '%s' is not a name Slurm takes (letters, digits, '_', '-', '.', ',')", opt,
                text);
}

// --mem: Slurm's memory per node, a whole number with an optional unit K, M, G or T (0: all of it).
static void check_mem(const char *text) {
    const char *c = text;
    while (isdigit((unsigned char)*c)) c++;
    if (c == text || (*c && (!strchr("KMGT", *c) || c[1])))
        die(EXIT_BADINPUT,
            "slurm: --mem '%s' is not a Slurm memory size (a whole number of megabytes, or with K, M, G or T: 64G)",
            text);
}

// --sbatch-line and --setup go into the script as given: one line each.
static void check_line(const char *opt, const char *text) {
    for (const char *c = text; *c; c++)
        if (iscntrl((unsigned char)*c))
            die(EXIT_BADINPUT, "slurm: %s '%s' has a control character (one line each)", opt, text);
}

// A shell word: as it is when it is plain, otherwise in single quotes.
static void put_shell_word(FILE *f, const char *s) {
    int plain = s[0] != 0;
    for (const char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_./+-:,@=", *c)) plain = 0;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            fputs("'\\''", f);
        else
            fputc(*c, f);
    }
    fputc('\'', f);
}

// "results/x.h5" → "results/x" (the stem that the script and the log share).
static char *output_stem(const char *out) {
    size_t n = strlen(out);
    if (n > 3 && !strcmp(out + n - 3, ".h5")) n -= 3;
    char *s = xmalloc(n + 1);
    memcpy(s, out, n);
    s[n] = 0;
    return s;
}

static char *concat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = xmalloc(na + nb + 1);
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    return s;
}

// mkdir -p of the directory part of path.
static void make_parent_dirs(const char *path) {
    char *d = xstrdup(path);
    char *slash = strrchr(d, '/');
    if (slash && slash != d) {
        *slash = 0;
        for (char *c = d + 1;; c++) {
            int end = *c == 0;
            if (*c == '/' || end) {
                *c = 0;
                if (mkdir(d, 0777) != 0 && errno != EEXIST)
                    die(EXIT_BADINPUT, "slurm: cannot create directory %s: %s", d, strerror(errno));
                struct stat st;
                if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
                    die(EXIT_BADINPUT, "slurm: %s is not a directory", d);
                if (end) break;
                *c = '/';
            }
        }
    }
    free(d);
}

// PROG found in a directory of PATH?
static int on_path(const char *prog) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *dirs = xstrdup(path);
    int found = 0;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *full = xmalloc(strlen(d) + strlen(prog) + 2);
        sprintf(full, "%s/%s", d, prog);
        found = access(full, X_OK) == 0;
        free(full);
    }
    free(dirs);
    return found;
}

// GPUs per node for the worker groups: a group's devices are its slot on its node times K
// onwards (sweep.c device_slot: its leader's node-local rank, less one on the coordinator's
// node, divided by G), so a node needs K x (its highest slot + 1). Ranks fill the nodes in
// order, M to a node. #SBATCH --gres is one count for every node: the most any node needs
// (the coordinator's node needs K fewer when M - 1 is a multiple of G, and then keeps
// those idle; a heterogeneous job could fit it, at the price of a job in components).
static long gpus_per_node(const SlurmOptions *o) {
    const long ranks = (long)o->nodes * o->ntasks_per_node;
    long slots = 0;
    for (long leader = 1; leader < ranks; leader += o->group_size) {
        const long node = leader / o->ntasks_per_node, local = leader % o->ntasks_per_node;
        const long slot = (local - (node == 0)) / o->group_size;
        if (slot + 1 > slots) slots = slot + 1;
    }
    return slots * o->gpus;
}

static char *script_text(const SlurmOptions *o, const char *name, const char *log) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) die(EXIT_RUNTIME, "slurm: out of memory");
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) die(EXIT_RUNTIME, "slurm: cannot read the current directory: %s", strerror(errno));
    check_sbatch_text("the current directory", cwd);
    char *exe = self_exe();
    fprintf(f,
            "#!/bin/bash\n"
            "# Slurm batch job for sweep %s: it runs the sweep under mpirun, requeues itself\n"
            "# when its time limit or a preemption stops it, and resumes. Written by attnsweep\n"
            "# %s as\n"
            "#   attnsweep slurm",
            name, ATTNSWEEP_VERSION);
    fputc(' ', f);
    put_shell_word(f, o->sweep);
    fprintf(f, " --nodes %d --ntasks-per-node %d --group-size %d", o->nodes, o->ntasks_per_node, o->group_size);
    if (o->time) fprintf(f, " --time %s", o->time);
    if (o->partition) fprintf(f, " --partition %s", o->partition);
    if (o->account) fprintf(f, " --account %s", o->account);
    if (o->mem) fprintf(f, " --mem %s", o->mem);
    if (o->overcommit) fputs(" --overcommit", f);
    if (o->launcher) fprintf(f, " --launcher %s", launchers[o->launcher]);
    if (o->gpus_per_group >= 0) fprintf(f, " --gpus-per-group %d", o->gpus_per_group);
    if (o->array) fprintf(f, " --array %d", o->array);
    for (int i = 0; i < o->sbatch_lines.n; i++) {
        fputs(" --sbatch-line ", f);
        put_shell_word(f, o->sbatch_lines.item[i]);
    }
    for (int i = 0; i < o->setup.n; i++) {
        fputs(" --setup ", f);
        put_shell_word(f, o->setup.item[i]);
    }
    fputs(" -o ", f);
    put_shell_word(f, o->output);
    fputs("\n# Submit it with sbatch. Every line after the #SBATCH lines and the settings is the\n"
          "# template scripts/slurm/attnsweep.sbatch of the attnsweep sources, where it is\n"
          "# explained line by line.\n\n",
          f);
    fprintf(f, "#SBATCH --job-name=%s\n", name);
    fprintf(f, "#SBATCH --nodes=%d\n", o->nodes);
    if (o->overcommit)  // Slurm refuses --ntasks-per-node above a node's CPUs even then
        fprintf(f, "#SBATCH --ntasks=%ld\n#SBATCH --overcommit\n", (long)o->nodes * o->ntasks_per_node);
    else
        fprintf(f, "#SBATCH --ntasks-per-node=%d\n", o->ntasks_per_node);
    if (o->time) fprintf(f, "#SBATCH --time=%s\n", o->time);
    if (o->partition) fprintf(f, "#SBATCH --partition=%s\n", o->partition);
    if (o->account) fprintf(f, "#SBATCH --account=%s\n", o->account);
    if (o->mem) fprintf(f, "#SBATCH --mem=%s\n", o->mem);
    if (o->gpus) fprintf(f, "#SBATCH --gres=gpu:%ld\n", gpus_per_node(o));
    if (o->cpus) fprintf(f, "#SBATCH --cpus-per-task=%d\n", o->cpus);
    fprintf(f, "#SBATCH --chdir=%s\n", cwd);
    fprintf(f, "#SBATCH --output=%s\n", log);
    fputs("#SBATCH --open-mode=append\n", f);
    fputs("#SBATCH --requeue\n", f);
    fprintf(f, "#SBATCH --signal=B:USR1@%d\n", SIGNAL_LEAD_SECONDS);
    if (o->array) fprintf(f, "#SBATCH --array=0-%d\n", o->array - 1);
    for (int i = 0; i < o->sbatch_lines.n; i++) fprintf(f, "#SBATCH %s\n", o->sbatch_lines.item[i]);
    fputs("\n# ---- settings (relative paths: from the --chdir directory)\n", f);
    fputs("ATTNSWEEP=", f);
    put_shell_word(f, exe);
    fputs("\nSWEEP=", f);
    put_shell_word(f, o->sweep);
    fputs("\nOUT=", f);
    put_shell_word(f, o->output);
    fprintf(f, "\nGROUP_SIZE=%d\n", o->group_size);
    if (o->gpus_per_group >= 0)
        fprintf(f, "GPUS_PER_GROUP=%d\n", o->gpus_per_group);
    else
        fputs("GPUS_PER_GROUP=\n", f);
    fprintf(f, "MAX_REQUEUES=%d\nLAUNCHER=%s\nSHARED=%s\nsetup() {\n", o->max_requeues, launchers[o->launcher],
            o->array ? "1" : "");
    // Each command in braces of its own (a comment in it ends at the newline): the first to
    // fail returns its status.
    for (int i = 0; i < o->setup.n; i++) fprintf(f, "  { %s\n  } || return $?\n", o->setup.item[i]);
    fputs(o->setup.n ? "}\n\n" : "  :\n}\n\n", f);
    fputs(slurm_script_body, f);
    if (fclose(f) != 0) die(EXIT_RUNTIME, "slurm: out of memory");
    free(exe);
    return text;
}

// Through a temporary file beside path, renamed (common/outfile.h): never through a link.
static void write_file(const char *path, const char *text) {
    char err[4200], tmp[4200];
    if (outfile_check(path, err, sizeof err) != 0) die(EXIT_BADINPUT, "slurm: cannot write %s", err);
    const int fd = outfile_create(path, tmp, sizeof tmp);
    if (fd < 0) die(EXIT_BADINPUT, "slurm: cannot write %s: %s", path, strerror(errno));
    if (outfile_write(fd, text, strlen(text)) != 0 || outfile_commit(fd, tmp, path) != 0) {
        const int e = errno;
        outfile_discard(tmp);
        die(EXIT_RUNTIME, "slurm: writing %s failed: %s", path, strerror(e));
    }
    close(fd);
}

// sbatch --parsable PATH; returns the job id it printed.
static long submit(const char *path) {
    int fds[2];
    if (pipe(fds) != 0) die(EXIT_RUNTIME, "slurm: pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *argv[] = {"sbatch", "--parsable", (char *)path, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "sbatch", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err) die(EXIT_RUNTIME, "slurm: cannot run sbatch: %s (the script is %s)", strerror(err), path);
    char out[256];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0) len += (size_t)r;
    out[len] = 0;
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) die(EXIT_RUNTIME, "slurm: waiting for sbatch: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die(EXIT_RUNTIME, "slurm: sbatch %s failed (%s %d); the script is kept", path,
            WIFEXITED(status) ? "exit code" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    char *end;
    long id = strtol(out, &end, 10);
    if (end == out || id <= 0 || (*end && *end != ';' && *end != '\n'))
        die(EXIT_RUNTIME, "slurm: sbatch printed '%.*s', not a job id", (int)strcspn(out, "\n"), out);
    return id;
}

int cmd_slurm(int argc, char **argv) {
    SlurmOptions o = {.nodes = 1, .ntasks_per_node = 4, .group_size = 1, .max_requeues = 20, .gpus_per_group = -1};
    const Option options[] = {
        OPT_INT("--nodes", &o.nodes, 1, MAX_COUNT, "N", "nodes (1)"),
        OPT_INT("--ntasks-per-node", &o.ntasks_per_node, 1, MAX_COUNT, "M",
                "MPI ranks per node (4); N x M ranks: one coordinator,\n"
                "the rest train in groups of G (N x M - 1 a multiple of G)"),
        OPT_INT("--group-size", &o.group_size, 1, SWEEP_MAX_GROUP_SIZE, "G", "ranks per worker group (1)"),
        OPT_INT("--gpus-per-group", &o.gpus_per_group, 0, 1024, "K",
                "a program's sweep: GPUs per worker group (CUDA_VISIBLE_DEVICES),\n"
                "over the YAML's resources.gpus; passed on to attnsweep run"),
        OPT_STRING("--time", NULL, &o.time, "T",
                   "time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or\n"
                   "D-HH:MM:SS, at least 5 minutes (default: the partition's)"),
        OPT_STRING("--partition", NULL, &o.partition, "P", "partition (default: the cluster's default)"),
        OPT_STRING("--account", NULL, &o.account, "A", "the account to charge (default: yours)"),
        OPT_STRING("--mem", NULL, &o.mem, "M", "memory per node: megabytes, or with K, M, G or T (64G)"),
        OPT_LIST("--sbatch-line", &o.sbatch_lines, "OPT",
                 "one more #SBATCH line, as sbatch takes it (--qos=high);\nrepeatable"),
        OPT_LIST("--setup", &o.setup, "CMD",
                 "a command the job runs first (module load openmpi);\n"
                 "repeatable, run in order; a failure ends the job"),
        OPT_CHOICE("--launcher", &o.launcher, launchers, "L",
                   "mpirun (default) or srun (srun --mpi=pmix)"),
        OPT_FLAG("--overcommit", NULL, &o.overcommit, 1,
                 "allow more ranks than cores (test machines; the script\n"
                 "asks for --ntasks N x M instead of --ntasks-per-node)"),
        OPT_INT("--max-requeues", &o.max_requeues, 0, MAX_COUNT, "K", "stop requeueing after K restarts (20)"),
        OPT_INT("--array", &o.array, 1, MAX_COUNT, "N",
                "a job array of N jobs sharing the sweep (attnsweep run\n"
                "--shared): each starts when Slurm has room, and one that\n"
                "dies loses only its running trials"),
        OPT_STRING("--output", "-o", &o.output, "FILE",
                   "results file (results/NAME.h5, NAME: the sweep's name);\n"
                   "the job log is FILE without .h5 + .slurm-JOBID.log"),
        OPT_STRING("--script", NULL, &o.script, "PATH",
                   "where the script goes (FILE without .h5 + .sbatch;\n'-': standard output)"),
        OPT_FLAG("--submit", NULL, &o.submit, 1, "run sbatch on the script and print the job id"),
        OPT_END,
    };
    char about[1024];
    snprintf(about, sizeof about,
             "Write a Slurm batch script that runs the sweep with\n"
             "  mpirun attnsweep run SWEEP.yaml --resume -o OUT --group-size G\n"
             "(mpirun takes the rank count from Slurm), passes SIGUSR1/SIGTERM on to it, and\n"
             "requeues itself when a time limit or preemption stopped the sweep (exit code 3),\n"
             "so the job continues where it stopped. Slurm signals the job %d s before --time.\n"
             "A program's sweep with resources {gpus: K, cpus: C} (or --gpus-per-group K) asks\n"
             "for --gres=gpu:K x the groups a node holds (ceil((M - 1) / G) on one node, where\n"
             "the coordinator takes a rank; the most of any node on several) and --cpus-per-task=C.\n"
             "The template with every line explained: scripts/slurm/attnsweep.sbatch.\n\n",
             SIGNAL_LEAD_SECONDS);
    const Command cmd = {"slurm", "attnsweep slurm SWEEP.yaml [options]",
                         about,
                         options, "\nPaths in the script are relative to the current directory (its --chdir).\n",
                         {1, "one search space only",
                          "no search space given (usage: attnsweep slurm SWEEP.yaml [options])"}};
    args_parse(&cmd, argc, argv, &o.sweep);
    for (const char *c = o.sweep; *c; c++)
        if (iscntrl((unsigned char)*c)) die(EXIT_BADINPUT, "slurm: the search space's path has a control character");

    long seconds = 0;
    if (o.time) {
        if (parse_time(o.time, &seconds) != 0)
            die(EXIT_BADINPUT,
                "slurm: --time '%s' is not a Slurm time (allowed: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, "
                "UNLIMITED)",
                o.time);
        if (seconds >= 0 && seconds < MIN_TIME_SECONDS)
            die(EXIT_BADINPUT,
                "slurm: --time %s is too short: the job is asked to stop %d s before its limit (give at least %d "
                "minutes)",
                o.time, SIGNAL_LEAD_SECONDS, MIN_TIME_SECONDS / 60);
    }
    if (o.partition) check_name("--partition", o.partition);
    if (o.account) check_name("--account", o.account);
    if (o.mem) check_mem(o.mem);
    for (int i = 0; i < o.sbatch_lines.n; i++) {
        const char *t = o.sbatch_lines.item[i];
        check_line("--sbatch-line", t);
        if (t[0] != '-' || !t[1])
            die(EXIT_BADINPUT,
                "slurm: --sbatch-line '%s' is not an sbatch option (e.g. --qos=high or --constraint=a100)", t);
    }
    for (int i = 0; i < o.setup.n; i++) {
        check_line("--setup", o.setup.item[i]);
        if (!o.setup.item[i][strspn(o.setup.item[i], " \t")])
            die(EXIT_BADINPUT, "slurm: --setup needs a command (e.g. 'module load openmpi')");
    }
    long ranks = (long)o.nodes * o.ntasks_per_node;
    if (ranks > MAX_COUNT) die(EXIT_BADINPUT, "slurm: %ld ranks is more than %d", ranks, MAX_COUNT);
    if (ranks < 1 + o.group_size || (ranks - 1) % o.group_size)  // what attnsweep run requires
        die(EXIT_BADINPUT,
            "slurm: --nodes %d x --ntasks-per-node %d = %ld ranks cannot form a coordinator and groups of "
            "--group-size %d (need 1 + a multiple of %d, at least %d)",
            o.nodes, o.ntasks_per_node, ranks, o.group_size, o.group_size, 1 + o.group_size);
    if (o.submit && o.script && !strcmp(o.script, "-"))
        die(EXIT_BADINPUT, "slurm: --submit needs the script in a file, not --script -");

    char *name = sweep_name(&o);
    char *default_out = NULL;
    if (!o.output) {
        default_out = xmalloc(strlen(name) + 16);
        sprintf(default_out, "results/%s.h5", name);
        o.output = default_out;
    }
    if (!o.output[0]) die(EXIT_BADINPUT, "slurm: --output needs a file name");
    check_sbatch_text("--output", o.output);
    char *stem = output_stem(o.output);
    char *log = concat(stem, ".slurm-%j.log");
    char *default_script = concat(stem, ".sbatch");
    const char *script = o.script ? o.script : default_script;
    if (!script[0]) die(EXIT_BADINPUT, "slurm: --script needs a file name (or '-')");
    char err[4200];
    if (strcmp(script, "-") && outfile_check(script, err, sizeof err) != 0)
        die(EXIT_BADINPUT, "slurm: cannot write %s", err);
    if (o.submit && !on_path("sbatch"))
        die(EXIT_RUNTIME, "slurm: --submit: sbatch is not on PATH (is this a Slurm login node?)");

    char *text = script_text(&o, name, log);
    make_parent_dirs(o.output);  // the log goes there too: Slurm does not create it
    if (!strcmp(script, "-")) {
        fputs(text, stdout);
        fflush(stdout);
    } else {
        make_parent_dirs(script);
        write_file(script, text);
        if (o.submit)
            printf("%ld\n", submit(script));
        else
            printf("wrote %s (submit it with: sbatch %s)\n", script, script);
    }
    free(text);
    free(log);
    free(stem);
    free(default_script);
    free(default_out);
    free(name);
    return 0;
}

/* nvml_floor.c - the floor under any NVML-based sampler: a bare loop of the 13 NVML calls the
 * dashboard's live GPU cards need, per GPU per sample, timed with the thread's CPU clock.
 *
 * The 13 calls (the fields the cards show): nvmlDeviceGetUtilizationRates (GPU and memory
 * utilisation), nvmlDeviceGetMemoryInfo_v2 (memory used/total), nvmlDeviceGetTemperature
 * (temperature), nvmlDeviceGetPowerUsage (power draw), nvmlDeviceGetClockInfo x3 (graphics, SM
 * and memory clocks), nvmlDeviceGetPerformanceState (pstate), nvmlDeviceGetCurrPcieLinkGeneration
 * and nvmlDeviceGetCurrPcieLinkWidth (PCIe link), nvmlDeviceGetComputeRunningProcesses_v3 (the
 * process list), nvmlDeviceGetEncoderUtilization and nvmlDeviceGetDecoderUtilization.
 *
 * Build: cc -O2 -o nvml_floor bench/nvml_floor.c -ldl
 * Usage: nvml_floor [-l LIB] [-n SAMPLES] [-r HZ]   (LIB: $GPU_MONITOR_NVML_LIB or
 *        libnvidia-ml.so.1; 50 samples at 10 Hz by default)
 * Prints one line: samples, GPUs, CPU and wall per sample and per call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void *dev_t_;
typedef int (*init_fn)(void);
typedef int (*count_fn)(unsigned *);
typedef int (*handle_fn)(unsigned, dev_t_ *);
typedef int (*util_fn)(dev_t_, unsigned *);
typedef int (*mem_fn)(dev_t_, void *);
typedef int (*u32_fn)(dev_t_, unsigned *);
typedef int (*arg_fn)(dev_t_, int, unsigned *);
typedef int (*procs_fn)(dev_t_, unsigned *, void *);
typedef int (*codec_fn)(dev_t_, unsigned *, unsigned *);

#define MAX_GPUS  64
#define MAX_PROCS 256

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    if (!p && b)
        p = dlsym(lib, b);
    if (!p) {
        fprintf(stderr, "nvml_floor: the library lacks %s\n", a);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    const char *path = getenv("GPU_MONITOR_NVML_LIB");
    int samples = 50;
    double hz = 10;
    int opt;
    while ((opt = getopt(argc, argv, "l:n:r:")) != -1) {
        if (opt == 'l')
            path = optarg;
        else if (opt == 'n')
            samples = atoi(optarg);
        else if (opt == 'r')
            hz = atof(optarg);
        else {
            fprintf(stderr, "usage: nvml_floor [-l LIB] [-n SAMPLES] [-r HZ]\n");
            return 2;
        }
    }
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    if (samples < 1 || hz <= 0) {
        fprintf(stderr, "nvml_floor: -n and -r must be positive\n");
        return 2;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "nvml_floor: %s\n", dlerror());
        return 1;
    }
    init_fn init = (init_fn)sym(lib, "nvmlInit_v2", "nvmlInit");
    count_fn count = (count_fn)sym(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    handle_fn handle =
        (handle_fn)sym(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    util_fn util = (util_fn)sym(lib, "nvmlDeviceGetUtilizationRates", NULL);
    mem_fn mem = (mem_fn)sym(lib, "nvmlDeviceGetMemoryInfo_v2", NULL);
    arg_fn temp = (arg_fn)sym(lib, "nvmlDeviceGetTemperature", NULL);
    u32_fn power = (u32_fn)sym(lib, "nvmlDeviceGetPowerUsage", NULL);
    arg_fn clock = (arg_fn)sym(lib, "nvmlDeviceGetClockInfo", NULL);
    u32_fn pstate = (u32_fn)sym(lib, "nvmlDeviceGetPerformanceState", NULL);
    u32_fn gen = (u32_fn)sym(lib, "nvmlDeviceGetCurrPcieLinkGeneration", NULL);
    u32_fn width = (u32_fn)sym(lib, "nvmlDeviceGetCurrPcieLinkWidth", NULL);
    procs_fn procs = (procs_fn)sym(lib, "nvmlDeviceGetComputeRunningProcesses_v3",
                                   "nvmlDeviceGetComputeRunningProcesses_v2");
    codec_fn enc = (codec_fn)sym(lib, "nvmlDeviceGetEncoderUtilization", NULL);
    codec_fn dec = (codec_fn)sym(lib, "nvmlDeviceGetDecoderUtilization", NULL);

    double t0 = now_s(CLOCK_MONOTONIC);
    if (init() != 0) {
        fprintf(stderr, "nvml_floor: nvmlInit failed\n");
        return 1;
    }
    unsigned n = 0;
    dev_t_ devs[MAX_GPUS];
    if (count(&n) != 0 || n == 0) {
        fprintf(stderr, "nvml_floor: no GPU\n");
        return 1;
    }
    if (n > MAX_GPUS)
        n = MAX_GPUS;
    for (unsigned i = 0; i < n; i++)
        if (handle(i, &devs[i]) != 0) {
            fprintf(stderr, "nvml_floor: no handle for GPU %u\n", i);
            return 1;
        }
    double open_s = now_s(CLOCK_MONOTONIC) - t0;

    /* nvmlMemory_v2_t with its version word; process entries of 24 bytes (v2/v3). */
    struct {
        unsigned version;
        unsigned long long total, reserved, free, used;
    } m;
    static unsigned char pbuf[MAX_PROCS * 24];
    double cpu = 0, wall = 0, period = 1.0 / hz, next = now_s(CLOCK_MONOTONIC);
    unsigned v, v2;
    for (int s = 0; s < samples; s++) {
        double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < n; i++) {
            unsigned u[2];
            util(devs[i], u);
            memset(&m, 0, sizeof m);
            m.version = 0x02000028u;
            mem(devs[i], &m);
            temp(devs[i], 0, &v);
            power(devs[i], &v);
            clock(devs[i], 0, &v);
            clock(devs[i], 1, &v);
            clock(devs[i], 2, &v);
            pstate(devs[i], &v);
            gen(devs[i], &v);
            width(devs[i], &v);
            unsigned np = MAX_PROCS;
            procs(devs[i], &np, pbuf);
            enc(devs[i], &v, &v2);
            dec(devs[i], &v, &v2);
        }
        cpu += now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        wall += now_s(CLOCK_MONOTONIC) - w0;
        next += period;
        double left = next - now_s(CLOCK_MONOTONIC);
        if (left > 0 && s + 1 < samples) {
            struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    printf("nvml_floor: %d samples at %g Hz, %u GPU(s), 13 calls per GPU: cpu %.1f us/sample "
           "(%.1f us/call), wall %.1f us/sample; init+open %.1f ms\n",
           samples, hz, n, cpu / samples * 1e6, cpu / samples / (13.0 * n) * 1e6,
           wall / samples * 1e6, open_s * 1e3);
    return 0;
}

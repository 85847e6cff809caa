/* Compiler helpers shared by every layer. */
#ifndef PB_UTIL_COMPILER_H
#define PB_UTIL_COMPILER_H

/* marks a function of the public API (the library is built with hidden
 * visibility, so everything else stays internal) */
#define PB_EXPORT __attribute__((visibility("default")))

#define PB_LIKELY(x) __builtin_expect(!!(x), 1)
#define PB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PB_NOINLINE __attribute__((noinline))
#define PB_ALWAYS_INLINE inline __attribute__((always_inline))
#define PB_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))

#define PB_CACHE_LINE 64

/* A full memory barrier: every earlier store is globally visible before
 * any later load or store.  On x86 a locked add to the stack does this and
 * costs less than mfence (the Linux kernel's smp_mb() makes the same
 * choice); elsewhere it is the C11 sequentially consistent fence. */
static inline void pb_memory_barrier(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("lock; addl $0,-4(%%rsp)" ::: "memory", "cc");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* tell the CPU we are spinning */
static inline void pb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
#define PB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif

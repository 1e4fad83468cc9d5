"""Python twin of src/core/inputs.c: the golden input streams, bit for bit, and FNV-1a 64; and
the CPU facts the goldens record."""
import numpy as np

M64 = (1 << 64) - 1
SPECIAL_BITS = [
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x00000001, 0x80000001,
    0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000,
    0x40a1eb85, 0xc0a1eb85, 0x41200000, 0xc1200000,
    0x40400000, 0xc0400000, 0x40800000, 0xc0800000, 0x3f000000,
    0xbf000000, 0x46ea6000, 0xc6ea6000, 0x42c80000, 0xc2c80000,
    0x33800000, 0xb3800000, 0x41100000, 0xc1100000,
]


def stream_u64(seed, idx):
    """Element idx (uint64 array) of stream seed; wrapping uint64 arithmetic as in C."""
    with np.errstate(over="ignore"):
        i = idx.astype(np.uint64)
        z = np.uint64((seed * 0xd1342543de82ef95) & M64) + (i + np.uint64(1)) * np.uint64(0x9e3779b97f4a7c15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return z ^ (z >> np.uint64(31))


def golden_f32_inputs(seed, n):
    out = np.zeros(n, dtype=np.uint32)
    ns = min(n, len(SPECIAL_BITS))
    out[:ns] = np.array(SPECIAL_BITS[:ns], dtype=np.uint32)
    if n > ns:
        idx = np.arange(ns, n, dtype=np.uint64)
        z = stream_u64(seed, idx)
        kind = (z & np.uint64(7)).astype(np.int64)
        m = (z >> np.uint64(41)).astype(np.uint32)
        sign = (((z >> np.uint64(40)) & np.uint64(1)).astype(np.uint32)) << np.uint32(31)
        r = ((z >> np.uint64(8)) & np.uint64(0xffffffff)).astype(np.uint32)
        e1 = (-8 + (r % np.uint32(12)).astype(np.int64) + 127).astype(np.uint32)
        e2 = (-30 + (r % np.uint32(37)).astype(np.int64) + 127).astype(np.uint32)
        u1 = sign | (e1 << np.uint32(23)) | m
        u2 = sign | (e2 << np.uint32(23)) | m
        k = (z >> np.uint64(40)).astype(np.int64) - 8388608
        f = (k.astype(np.float64) * 12.0 * 2.0**-23).astype(np.float32)
        u3 = f.view(np.uint32)
        res = np.where(kind < 4, u1, np.where(kind < 6, u2, np.where(kind == 6, r, u3)))
        out[ns:] = res
    return out.view(np.float32)


def all_u16():
    return np.arange(65536, dtype=np.uint32).astype(np.uint16)


def _mix64(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return z ^ (z >> np.uint64(31))


def hash64(data):
    """Twin of gm_hash64: data is a numpy array (any dtype) or bytes; returns a Python int."""
    b = bytes(memoryview(np.ascontiguousarray(data)).cast("B")) if isinstance(data, np.ndarray) else bytes(data)
    n = len(b)
    pad = (-n) % 8
    w = np.frombuffer(b + b"\0" * pad, dtype="<u8")
    with np.errstate(over="ignore"):
        idx = np.arange(1, len(w) + 1, dtype=np.uint64) * np.uint64(0x9e3779b97f4a7c15)
        s = np.sum(_mix64(w + idx), dtype=np.uint64)
        return int(_mix64(np.uint64(n) + s))


def cpu_model():
    """/proc/cpuinfo's model name: goldens of MKL/oneDNN paths depend on the CPU that wrote them."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def cpu_flag(name):
    """True if /proc/cpuinfo lists the CPU flag (e.g. avx512_fp16)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return name in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False


def host_is_intel_amx():
    """An Intel CPU whose AMX-BF16 tiles torch uses (the intel-amx target, natively): GenuineIntel,
    amx_bf16 and amx_tile listed, and none of the dispatch caps set."""
    import os
    try:
        with open("/proc/cpuinfo") as f:
            intel = "GenuineIntel" in f.read()
    except OSError:
        return False
    caps = ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
    return intel and cpu_flag("amx_bf16") and cpu_flag("amx_tile") and not any(os.environ.get(k) for k in caps)


def formula_a(m, k):
    """A [m, k] float32 with A[i, k] = ((37 i + 71 k) % 1009 - 504) / 503, correctly rounded (the
    f32 matmul goldens' rows; the tests rebuild them with the same float division)."""
    i = np.arange(m, dtype=np.int64).reshape(m, 1)
    kk = np.arange(k, dtype=np.int64).reshape(1, k)
    return ((37 * i + 71 * kk) % 1009 - 504).astype(np.float32) / np.float32(503)


def formula_b(k, n):
    """B [k, n] float32 with B[k, n] = ((31 k + 17 n) % 97 - 48) / 64, exact."""
    kk = np.arange(k, dtype=np.int64).reshape(k, 1)
    nn = np.arange(n, dtype=np.int64).reshape(1, n)
    return ((31 * kk + 17 * nn) % 97 - 48).astype(np.float32) / np.float32(64)

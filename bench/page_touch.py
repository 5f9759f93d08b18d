#!/usr/bin/env python3
"""First-touch cost of anonymous memory, small pages against transparent huge
pages (the question behind --huge-pages): maps SIZE bytes, asks for huge pages
or not (MADV_HUGEPAGE), writes one byte per 4 KiB page, and prints the time
(CLOCK_MONOTONIC). --pause S between rounds lets a VM's balloon report the
freed memory to its host first, as between table epochs in practice.

  python3 bench/page_touch.py                 # 1 GiB, 3 rounds each, 5 s pauses
  python3 bench/page_touch.py --pause 0       # memory just freed: the host still backs it
"""
import argparse
import mmap
import time

PAGE = 4096


def touch(size, huge):
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    t0 = time.monotonic()
    if huge:
        m.madvise(mmap.MADV_HUGEPAGE)
    for off in range(0, size, PAGE):
        m[off] = 1
    took = time.monotonic() - t0
    m.close()
    return took


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pause", type=float, default=5.0, help="seconds between rounds")
    a = p.parse_args()
    size = a.size_mib << 20
    for huge in (False, True):
        for r in range(a.rounds):
            took = touch(size, huge)
            print(f"{'huge' if huge else 'small'} pages round {r + 1}: {took:.3f} s "
                  f"for {a.size_mib} MiB ({took * 1024 / a.size_mib:.2f} s per GiB)", flush=True)
            time.sleep(a.pause)


if __name__ == "__main__":
    main()

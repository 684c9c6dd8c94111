"""A named Python thread that burns a known amount of CPU (by the thread's own clock)."""

import os
import threading
import time

BURN_SECONDS = 1.0


def burn() -> None:
    end = time.thread_time() + BURN_SECONDS
    while time.thread_time() < end:
        pass
    time.sleep(0.3)  # stay alive so the sampler reads the final count


worker = threading.Thread(target=burn, name="burner")
worker.start()
worker.join()
print(f"BURNER_TID={worker.native_id}")
print(f"WORKLOAD_POLICY={os.sched_getscheduler(0)}")  # the recorder's own policy must not leak

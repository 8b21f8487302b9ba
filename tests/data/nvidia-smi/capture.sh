#!/bin/bash
# How the preflight captures in this directory were made on a device machine with one H200 (run with OUT=dir):
# idle, then with a second process (this script's ctypes child) holding 40 GiB through the CUDA driver API.
set -x
cd "$OUT"
nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,memory.free --format=csv,noheader,nounits > idle-query-gpu.csv
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits > idle-query-compute-apps.csv
echo "rc=$?" 
python3 - <<'PY' &
import ctypes, os, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev = ctypes.c_int(); assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
ctx = ctypes.c_void_p(); assert cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev) == 0
ptr = ctypes.c_uint64(); r = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(40 << 30)); print("alloc", r, flush=True)
open(os.environ["OUT"] + "/holder-ready", "w").close()
time.sleep(40)
PY
for i in $(seq 100); do [ -e "$OUT/holder-ready" ] && break; sleep 0.2; done
sleep 1
nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,memory.free --format=csv,noheader,nounits > held-query-gpu.csv
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory,process_name --format=csv,noheader,nounits > held-query-compute-apps.csv
nvidia-smi > held-nvidia-smi.txt
ps -o pid,user,args -p $(cut -d, -f1 held-query-compute-apps.csv | head -1) > held-ps.txt
id > id.txt; nvidia-smi --version > version.txt
date -u +%FT%TZ > captured-at.txt
rm -f "$OUT/holder-ready"; kill %1
wait
cat *.csv held-ps.txt

"""The benchmark runner behind bench/run.py: which allocators and workloads
exist (allocators.py, cases.py), how one run is executed on the host or in the
multi-node VM (execute.py, vm.py), the instruction-count study
(callgrind.py), and how results become tables, CSV and plots (report.py,
plots.py). machine.py records where results came from."""

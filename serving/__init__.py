"""The inference bench: exported models under TensorFlow and ONNX Runtime, Pentathlon scenarios.

    python -m serving.bench RUN_DIR --runtime tf,onnxruntime --precision fp32 --scenario all

Modules: runtimes (the runtime interface and registry), worker (the model process), protocol
(the Efficiency Pentathlon stdio protocol, both sides), scenarios (schedules), runner (timing one
scenario), instances (what is sent), outputs (what a valid answer is), confine (the files a worker
may touch), clock (the injectable clock runner, loadgen, worker and bare_loop schedule and time by),
metrics, energy, gpu, report, plots, loadgen (MLPerf LoadGen), artifacts (what a run directory
holds), bench (the command line).
"""

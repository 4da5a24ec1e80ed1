"""The inference bench: exported models under TensorFlow and ONNX Runtime, Pentathlon scenarios.

    python -m serving.bench RUN_DIR --runtime tf,onnxruntime --precision fp32 --scenario all
    python -m serving.bench --command "python my_submission.py" --task=listops --data-dir=D

Modules: runtimes (the runtime interface and registry), submission (an exported run as an
Efficiency Pentathlon submission, the bench's model process), protocol (Pentathlon's stdio
protocol: its lines and the driver's side), scenarios (Pentathlon's schedules), runner (timing one
scenario), instances (the task's rows, what is sent), outputs (what a valid answer is: the task's
label strings), confine (the files a submission may touch offline), clock (the injectable clock
runner, loadgen and bare_loop schedule and time by),
metrics, energy, gpu, report, plots, loadgen (MLPerf LoadGen), artifacts (what a run directory
holds), bench (the command line).
"""

"""A stand-in Pentathlon submission for the bench tests: plain stdio, no serving imports.

    python -m tests.serving.fake_model MODE

MODE: answer (class id = sum of the tokens mod 10, with a line of log noise first; offline
handshake too), error (an error line for every request), crash (exits with code 3 at the first
request), hang (never answers); out_of_range and short_logits answer like `answer`, one output per
instance, but with nonsense for a 10-class task: class id 10 + the sum, or two logits.
"""

import json
import sys
import time

MODE = "answer"


def classify(instance):
    if MODE == "out_of_range":
        return 10 + sum(instance)
    if MODE == "short_logits":
        return [0.5, -0.5]
    return sum(instance) % 10


def offline(request):
    with open(request["input_file"]) as lines:
        instances = [json.loads(line) for line in lines if line.strip()]
    say({"status": "ready"})
    outputs = [classify(instance) for instance in instances]
    say({"status": "predicted"})
    with open(request["output_file"], "w") as out:
        out.writelines(json.dumps(output) + "\n" for output in outputs)
    say({"status": "written"})


def say(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def answer(request):
    if isinstance(request, dict):
        offline(request)
        return
    print("log noise that is not JSON", flush=True)
    say([classify(instance) for instance in request])


def main(mode):
    global MODE
    MODE = mode
    for line in sys.stdin:
        if mode == "crash":
            print("fake model crashed", file=sys.stderr, flush=True)
            sys.exit(3)
        if mode == "hang":
            time.sleep(3600)
        if mode == "error":
            say({"error": "this model refuses everything"})
            continue
        answer(json.loads(line))


if __name__ == "__main__":
    main(sys.argv[1])

"""A job that prints fast keeps every line in its CloudWatch Logs stream, once and in order
(issue 35): Podman 4.3's follow-mode logs API misorders and splits lines and can end early, and
the agent used to re-read from the start skipping a count of lines, so each misordered line
became a lost one and a later one was doubled. The agent now reads the container's log file by
byte offset (docker_logfile_*): this test prints 100,000 numbered lines as fast as busybox can,
a 50,000-character line (which the engine stores as several partial records) and a last line
without its newline, and checks the stream holds exactly those, in order.
"""
import tyhelpers as H

N = 100000
LONG = 50000


def test_fast_printer_loses_and_doubles_nothing(server, sm, logs):
    name = H.unique("logs-fast")
    script = (f"seq 1 {N}; head -c {LONG} /dev/zero | tr '\\0' x; echo; "
              "printf 'tail-without-newline'")
    sm.create_training_job(**H.job_request(name, script))
    d = H.wait_job(sm, name, timeout=300)
    assert d["TrainingJobStatus"] == "Completed", d.get("FailureReason")
    stream = H.job_stream(logs, name)["logStreams"][0]["logStreamName"]
    events, _ = H.log_events(logs, stream)
    msgs = [e["message"] for e in events]
    nums = [int(m) for m in msgs if m.isdigit()]
    if nums != list(range(1, N + 1)):
        seen = set(nums)
        missing = [i for i in range(1, N + 1) if i not in seen][:10]
        doubled = len(nums) - len(seen)
        raise AssertionError(f"{len(nums)} numbered lines of {N}: first missing {missing}, "
                             f"{doubled} doubled, in order: {nums == sorted(nums)}")
    longs = [m for m in msgs if m.startswith("xxxx")]
    assert len(longs) == 1 and longs[0] == "x" * LONG, [len(m) for m in longs]
    assert "tail-without-newline" in msgs, msgs[-5:]
    times = [e["timestamp"] for e in events]
    assert times == sorted(times)

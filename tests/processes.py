"""Stopping a command the way a user does: its reader goes away, or a signal arrives."""
import subprocess


def stopped(command, how, **options):
    """Run `command`; once it has printed, close its stdout (how="reader gone", as `| head -c 20`) or
    send it SIGTERM (how="terminated"); its exit status and stderr."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)
    try:
        if how == "reader gone":
            process.stdout.read(20)
            process.stdout.close()
        else:
            process.stdout.readline()
            process.terminate()
        err = process.communicate(timeout=300)[1].decode()
        return process.returncode, err
    finally:
        process.kill()
        process.wait()

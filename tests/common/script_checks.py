"""The check-and-report loop of the plain-Python test scripts (the ones meson
runs directly, without pytest): each check prints "ok" or "FAIL" with its
detail, and exit_status() ends the script with 1 when any failed. Plain
Python 3 standard library; a script imports it with tests/common on sys.path.
"""

failures = []


def check(name, cond, detail=""):
    if cond:
        print(f"ok   {name}")
    else:
        print(f"FAIL {name}\n{detail}")
        failures.append(name)


def exit_status():
    """Prints the summary; 1 when a check failed, else 0."""
    if failures:
        print(f"\n{len(failures)} failed: {', '.join(failures)}")
        return 1
    print("\nall passed")
    return 0

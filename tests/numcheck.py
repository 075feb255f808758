"""numcheck: how the Python checks in tests/ compare numbers, as CHECK_ALL_CLOSE does in
tests/check.h. close(got, want, rtol, atol) holds only if got and want (numbers, lists or
arrays of one shape; want may also be one number for all of got) are finite everywhere
and every |got - want| <= atol + rtol |want|. A NaN or an Inf on either side is never
close: test `not close(...)`, never `abs(got - want) > tol`, which a NaN passes.
(tests/lib.sh puts tests/ on PYTHONPATH.)"""
import numpy as np


def close(got, want, rtol=0.0, atol=0.0):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)  # None (JSON null) is NaN
    if want.shape not in ((), got.shape):
        return False
    return bool(np.isfinite(got).all() and np.isfinite(want).all()
                and (np.abs(got - want) <= atol + rtol * np.abs(want)).all())

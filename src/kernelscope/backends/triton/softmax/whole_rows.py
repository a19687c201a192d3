"""The row and narrow plans' kernel: whole rows in a program's registers, one row or several a program."""

import triton
import triton.language as tl


@triton.jit
def softmax_rows_tuned_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                              ROWS: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr = False):
    """ROWS whole rows per program, held in registers: reads each element once, writes it once.

    The lecture's kernel with a [ROWS, BLOCK] tile; ROWS = 1 is the row path.
    """
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    if WIDE:  # past 2^31 elements a row's offset overflows 32 bits (a kernel of its own: wide_index)
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK)
    # The last program's rows past the end re-read the last row (no NaN from an
    # empty row) and store nothing.
    x_rows = tl.minimum(rows, n_rows - 1)
    x = tl.load(x_ptr + x_rows[:, None] * x_row_stride + cols[None, :], mask=cols[None, :] < n_cols,
                other=-float("inf"))
    x = x.to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    # One reciprocal per row, then a multiply per element (a divide costs several instructions).
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)

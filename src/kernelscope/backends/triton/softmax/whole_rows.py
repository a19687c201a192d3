"""The row and narrow plans' kernel: whole rows in a program's registers, one row or several a program."""

import triton
import triton.language as tl


@triton.jit
def softmax_rows_tuned_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                              ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """ROWS whole rows per program, held in registers: reads each element once, writes it once.

    The lecture's kernel with a [ROWS, BLOCK] tile; ROWS = 1 is the row path.
    """
    # 64-bit: past 2^31 elements a row's start (row x stride) overflows int32. The program's first row starts
    # x and y in 64 bits, once a program; its rows' offsets from there stay 32-bit (ROWS > 1 only for rows
    # narrow enough that ROWS of them hold few elements).
    row0 = tl.program_id(0).to(tl.int64) * ROWS
    x_rows_ptr = x_ptr + row0 * x_row_stride
    y_rows_ptr = y_ptr + row0 * y_row_stride
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    # The last program's rows past the end re-read the last row (no NaN from an
    # empty row) and store nothing.
    # the program's last row, from row0 (0 for ROWS = 1, which the compiler then sees)
    last = tl.maximum(tl.minimum(n_rows - 1 - row0, ROWS - 1), 0).to(tl.int32)
    x_rows = tl.minimum(rows, last)
    x = tl.load(x_rows_ptr + x_rows[:, None] * x_row_stride + cols[None, :], mask=cols[None, :] < n_cols,
                other=-float("inf"))
    x = x.to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    # One reciprocal per row, then a multiply per element (a divide costs several instructions).
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    mask = (rows[:, None] <= last) & (cols[None, :] < n_cols)
    tl.store(y_rows_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)

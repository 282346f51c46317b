"""A table that reads the same in a terminal, in a notebook and as a notebook's plain text.

A pandas ``Styler`` shows only ``<pandas.io.formats.style.Styler ...>`` outside HTML viewers,
and a DataFrame's text form truncates long cells; :class:`Table` formats each column once and
gives both an HTML and a complete plain-text rendering of the same strings.
"""

from __future__ import annotations

__all__ = ["Table"]


class Table:
    """A pandas DataFrame with per-column formats, shown whole as text and as HTML.

    Parameters
    ----------
    frame : pandas.DataFrame
        The values (kept as they are: :attr:`frame` is what code reads and CSV files hold).
    formats : dict, optional
        ``{column: format}``: a format string (``"{:.3f}"``) or a callable; other cells are
        shown with ``str`` (floats with 4 significant digits). NaN shows as an empty cell.
    left : sequence of str, optional
        Columns of text to align left (the others are aligned right).
    title : str, optional
        A line printed above the text form (the HTML form's caption).
    """

    def __init__(self, frame, formats=None, left=(), title=None):
        self.frame = frame
        self.formats = dict(formats or {})
        unknown = set(self.formats) - set(frame.columns)
        if unknown:
            raise ValueError(f"`formats` names columns that are not in the table: {sorted(unknown)}.")
        self.left = tuple(left)
        self.title = title

    def _cell(self, column, value):
        import math

        if isinstance(value, float) and math.isnan(value):
            return ""
        fmt = self.formats.get(column)
        if fmt is None:
            return f"{value:.4g}" if isinstance(value, float) else str(value)
        return fmt(value) if callable(fmt) else fmt.format(value)

    def strings(self):
        """Return the formatted table: a DataFrame of strings, same index and columns."""
        out = self.frame.copy().astype(object)
        for column in out.columns:
            out[column] = [self._cell(column, v) for v in self.frame[column]]
        return out

    def to_string(self):
        """Return the whole table as text: no truncated cell, no wrapped column."""
        cells = self.strings()
        index = [str(i) for i in cells.index]
        head = [str(c) for c in cells.columns]
        width_index = max([len(str(cells.index.name or ""))] + [len(i) for i in index])
        widths = [max([len(h)] + [len(v) for v in cells[c]]) for c, h in zip(cells.columns, head)]

        def line(first, values):
            parts = [first.ljust(width_index)]
            for c, v, w in zip(cells.columns, values, widths):
                parts.append(v.ljust(w) if c in self.left else v.rjust(w))
            return "  ".join(parts).rstrip()

        lines = [self.title] if self.title else []
        lines.append(line(str(cells.index.name or ""), head))
        lines += [line(i, [cells.iloc[r, j] for j in range(len(head))]) for r, i in enumerate(index)]
        return "\n".join(lines)

    def __str__(self):
        return self.to_string()

    __repr__ = __str__

    def _repr_html_(self):
        import html

        cells = self.strings()
        rows = []
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cells.columns)
        rows.append(f"<tr><th>{html.escape(str(cells.index.name or ''))}</th>{head}</tr>")
        for label, row in cells.iterrows():
            tds = "".join(
                f'<td style="text-align: {"left" if c in self.left else "right"}">{html.escape(v)}</td>'
                for c, v in zip(cells.columns, row)
            )
            rows.append(f"<tr><th>{html.escape(str(label))}</th>{tds}</tr>")
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f'<table class="dataframe">{caption}{"".join(rows)}</table>'

    def to_csv(self, path):
        """Write the values (not the formatted strings) to a CSV file."""
        self.frame.to_csv(path)

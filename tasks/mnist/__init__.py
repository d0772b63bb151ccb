"""MNIST: the digits from a registry package (data.py), digit series counted and summed (series.py,
Table 2), parity of four digits (parity.py), canvases of digits (canvas.py) and counting the even
ones on them (count_even.py, Table 4)."""

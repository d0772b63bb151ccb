"""Language to number: English number words (number_words.py) read into their value
(translation.py, Table 3 and Figure 3)."""

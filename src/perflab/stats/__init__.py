"""Statistics, at the bottom of the house: plain numbers in, plain numbers out."""

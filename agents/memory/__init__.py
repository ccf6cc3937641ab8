"""The heart of memoryviz: pure Python, no Django.

Pages, the API, the management commands and the benchmarks all call these functions.
"""

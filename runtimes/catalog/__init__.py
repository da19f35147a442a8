"""runtimes.catalog"""

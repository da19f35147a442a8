"""runtimes.accounts"""

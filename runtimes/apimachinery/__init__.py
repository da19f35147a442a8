"""runtimes.apimachinery"""

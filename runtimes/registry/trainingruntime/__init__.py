"""runtimes.registry.trainingruntime"""

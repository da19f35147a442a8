"""The TrainingJob kind: a run asked of a TrainingRuntime, admitted only when it compiles."""

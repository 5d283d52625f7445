"""Coverage-guided fuzzing of the package's parsers and boundaries (atheris): ``make fuzz``."""

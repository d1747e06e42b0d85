"""Will it run there: per operator, what each runtime and delegate does with it."""

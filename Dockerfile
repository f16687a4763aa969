FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY blackboard blackboard
COPY memory memory
COPY retrieval retrieval
COPY consolidation consolidation
COPY workers workers
COPY gateway gateway
COPY cli cli
RUN pip install --no-cache-dir '.[semantic,gateway]'
ENTRYPOINT ["blackboard"]

# Builds the cardinal-scheduler image that config/scheduler/deployment.yaml runs.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /cardinal-scheduler ./cmd/scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /cardinal-scheduler /cardinal-scheduler
USER 65532:65532
ENTRYPOINT ["/cardinal-scheduler"]

// Swagger UI over the service's own /openapi.json; served by the service (no CDN), and a
// separate file so the page's Content-Security-Policy can forbid inline scripts.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  tryItOutEnabled: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
